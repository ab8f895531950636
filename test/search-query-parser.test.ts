import t from 'tap';
import { parseQuery } from '../src/query-language/query-parser.js';
import { QuerySyntaxError } from '../src/query-language/query-syntax-error.js';
import type { QueryNode } from '../src/query-language/query-ast.js';

/** A compact rendering of a tree, so each table row states the whole expected tree. */
function show(node: QueryNode): string {
  switch (node.type) {
    case 'and':
    case 'or':
      return `(${node.type} ${node.children.map(show).join(' ')})`;
    case 'not':
      return `(not ${show(node.child)})`;
    case 'text':
      return JSON.stringify(node.text);
    case 'all':
      return '*';
    case 'filter':
      switch (node.key) {
        case 'like-image': return `like-image[${node.imageId}]`;
        case 'tag': return `tag[${node.tag}]`;
        case 'filename': return `filename[${node.match} ${node.pattern}]`;
        case 'split': return `split[${node.split}]`;
        case 'job': return `job[${node.jobId}]`;
        case 'class': return node.count ? `class[${node.className} ${node.count.op} ${node.count.value}]` : `class[${node.className}]`;
        case 'date': return `date[${node.op} ${node.date}]`;
        case 'project':
        case 'dataset': return `${node.key}[${node.project}]`;
        default: return `${node.measure}[${node.bound} ${node.value}]`;
      }
  }
}

const valid: [query: string, tree: string][] = [
  // every filter of docs/SEARCH.md, "Query language"
  ['like-image:img-123', 'like-image[img-123]'],
  ['tag:night', 'tag[night]'],
  ['filename:car.jpg', 'filename[exact car.jpg]'],
  ['filename:car*', 'filename[prefix car]'],
  ['filename:*.png', 'filename[suffix .png]'],
  ['filename:*lot*', 'filename[contains lot]'],
  ['split:train', 'split[train]'],
  ['split:test', 'split[test]'],
  ['split:valid', 'split[valid]'],
  ['job:job_42', 'job[job_42]'],
  ['min-width:640', 'width[min 640]'],
  ['max-width:1920', 'width[max 1920]'],
  ['min-height:0', 'height[min 0]'],
  ['max-height:1080', 'height[max 1080]'],
  ['min-annotations:3', 'annotations[min 3]'],
  ['max-annotations:0', 'annotations[max 0]'],
  ['class:car', 'class[car]'],
  ['project:parking-lot', 'project[parking-lot]'],
  ['dataset:parking-lot', 'dataset[parking-lot]'],
  // comparison operators on class: and date
  ['class:car=2', 'class[car = 2]'],
  ['class:car>=2', 'class[car >= 2]'],
  ['class:car<=2', 'class[car <= 2]'],
  ['class:car>2', 'class[car > 2]'],
  ['class:car<2', 'class[car < 2]'],
  ['date:2024-03-01', 'date[= 2024-03-01]'],
  ['date>=2024-03-01', 'date[>= 2024-03-01]'],
  ['date<2024-04-01', 'date[< 2024-04-01]'],
  ['date<=2024-02-29', 'date[<= 2024-02-29]'],
  ['date>2024-01-31', 'date[> 2024-01-31]'],
  ['date>=2024-03-01 date<2024-04-01', '(and date[>= 2024-03-01] date[< 2024-04-01])'],
  // quoted values
  ['tag:"night shift"', 'tag[night shift]'],
  ['class:"traffic light">=2', 'class[traffic light >= 2]'],
  ['class:"a>=b"', 'class[a>=b]'],
  ['filename:"my photo*"', 'filename[exact my photo*]'],
  ['filename:*"my photo"*', 'filename[contains my photo]'],
  ['"red car"', '"red car"'],
  ['tag:"say \\"hi\\""', 'tag[say "hi"]'],
  ['"AND"', '"AND"'],
  // free text, semantic search, match-all
  ['red car', '"red car"'],
  ['red car tag:x blue', '(and "red car" tag[x] "blue")'],
  ['*', '*'],
  ['and or not', '"and or not"'],
  ['https://example.com/x', '"https://example.com/x"'],
  // boolean operators, parentheses, minus, juxtaposition
  ['tag:a AND tag:b', '(and tag[a] tag[b])'],
  ['tag:a tag:b', '(and tag[a] tag[b])'],
  ['tag:a OR tag:b', '(or tag[a] tag[b])'],
  ['tag:a OR tag:b tag:c', '(or tag[a] (and tag[b] tag[c]))'],
  ['tag:a tag:b OR tag:c', '(or (and tag[a] tag[b]) tag[c])'],
  ['(tag:a OR tag:b) tag:c', '(and (or tag[a] tag[b]) tag[c])'],
  ['NOT tag:a', '(not tag[a])'],
  ['-class:car', '(not class[car])'],
  ['split:train -class:car', '(and split[train] (not class[car]))'],
  ['-(tag:a OR tag:b)', '(not (or tag[a] tag[b]))'],
  ['NOT NOT tag:a', '(not (not tag[a]))'],
  ['((tag:a))', 'tag[a]'],
  ['red AND car', '(and "red" "car")'],
  ['cars class:car>=2 -split:test (date>=2024-01-01 OR tag:"late shift")',
    '(and "cars" class[car >= 2] (not split[test]) (or date[>= 2024-01-01] tag[late shift]))'],
];

t.test('valid queries parse into the expected tree', async (t) => {
  for (const [query, tree] of valid) {
    t.equal(show(parseQuery(query)), tree, query);
  }
});

t.test('nodes carry the source span they came from', async (t) => {
  const query = 'tag:a (class:car>=2 OR -split:test)';
  const root = parseQuery(query);
  t.same(root.span, { start: 0, end: query.length - 1 });
  if (root.type !== 'and') throw new Error('expected an and');
  const [tag, or] = root.children;
  t.equal(query.slice(tag.span.start, tag.span.end), 'tag:a');
  if (or.type !== 'or') throw new Error('expected an or');
  t.equal(query.slice(or.children[0].span.start, or.children[0].span.end), 'class:car>=2');
  t.equal(query.slice(or.children[1].span.start, or.children[1].span.end), '-split:test');
});

const invalid: [query: string, position: number, reason: RegExp][] = [
  ['', 0, /empty/],
  ['   ', 0, /empty/],
  ['(tag:a OR tag:b', 0, /Unclosed parenthesis/],
  ['tag:a (tag:b (tag:c)', 6, /Unclosed parenthesis/],
  ['tag:a)', 5, /Unmatched "\)"/],
  [') tag:a', 0, /Unmatched "\)"/],
  ['()', 0, /Empty parentheses/],
  ['tag:a AND', 6, /AND needs a term after it, but the query ends/],
  ['tag:a OR', 6, /OR needs a term after it/],
  ['OR tag:a', 0, /OR needs a term before it/],
  ['AND tag:a', 0, /AND needs a term before it/],
  ['tag:a AND OR tag:b', 6, /AND needs a term after it, but found OR/],
  ['(tag:a OR) tag:b', 7, /OR needs a term after it, but found "\)"/],
  ['tag:a NOT', 6, /NOT needs a term after it/],
  ['tag:a -', 6, /minus must be directly followed/],
  ['tag:a - tag:b', 6, /minus must be directly followed/],
  ['min-width:abc', 10, /min-width: expects a whole number.*"abc"/],
  ['min-width:', 10, /min-width: expects a whole number.*nothing/],
  ['max-height:-3', 11, /whole number/],
  ['min-annotations:1.5', 16, /whole number/],
  ['class:car>=many', 11, /class:car>= expects a whole number/],
  ['class:>=2', 6, /needs a class name/],
  ['date:2024-13-01', 5, /not a calendar day/],
  ['date:2023-02-29', 5, /not a calendar day/],
  ['date>=yesterday', 6, /YYYY-MM-DD/],
  ['date:2024-3-1', 5, /YYYY-MM-DD/],
  ['split:training', 6, /Unknown split "training"; expected train, test, valid/],
  ['tag:x split:', 12, /split: needs a value/],
  ['tag:', 4, /tag: needs a value/],
  ['spilt:train', 0, /Unknown filter "spilt:"; known filters:/],
  ['splt:train', 0, /Unknown filter "splt:"; did you mean split:\?; known filters:/],
  ['tag>=3', 3, /tag takes ":"/],
  ['tag:"night', 4, /Unterminated quote/],
  ['""', 0, /Empty quoted text/],
  ['filename:*', 9, /needs a name besides/],
];

t.test('invalid queries fail with a message pointing at the character', async (t) => {
  for (const [query, position, reason] of invalid) {
    const error = t.throws(() => parseQuery(query), QuerySyntaxError, query) as QuerySyntaxError | undefined;
    if (!(error instanceof QuerySyntaxError)) continue;
    t.equal(error.position, position, `${query}: position`);
    t.match(error.reason, reason, `${query}: reason`);
    const [first, queryLine, caretLine] = error.message.split('\n');
    t.equal(first, `Invalid query at column ${position + 1}: ${error.reason}`, `${query}: first line`);
    t.equal(queryLine, `  ${query}`, `${query}: query line`);
    t.equal(caretLine, `  ${' '.repeat(position)}^`, `${query}: caret line`);
  }
});
