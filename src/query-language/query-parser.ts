/**
 * Parser of the search query language (docs/SEARCH.md, "Query language"). Grammar, lowest
 * precedence first:
 *
 *   query   := or EOF
 *   or      := and ("OR" and)*
 *   and     := unary (["AND"] unary)*        juxtaposition is AND
 *   unary   := "NOT" unary | "-" unary | primary
 *   primary := "(" or ")" | filter | text | "*"
 *
 * `AND`, `OR` and `NOT` are operators only when written in capitals and unquoted. Adjacent
 * free-text words of one AND sequence merge into one text node (one semantic-search phrase).
 */
import { QuerySyntaxError } from './query-syntax-error.js';
import type { FilterBase, FilterNode, QueryNode, Span, TextNode } from './query-ast.js';
import { parseFilterWord } from './query-filters.js';
import { isBareWord, tokenize, wordText } from './query-lexer.js';
import type { Token, WordChar } from './query-lexer.js';

/**
 * Longest query parsed (UTF-16 code units). Queries are typed or built from a few filters; the
 * bound keeps the token list, and the message that quotes the query, small.
 */
export const MAX_QUERY_LENGTH = 4096;

/**
 * Deepest nesting parsed: each "(", NOT and leading minus opens a level. The parser recurses
 * once per level, so without the bound `((((...a)))` or `NOT NOT ...` of some thousands of levels
 * overflows the stack ("Maximum call stack size exceeded").
 */
export const MAX_QUERY_DEPTH = 64;

/**
 * Turns one word of a query into a filter of a dialect, or `null` when the word is free text.
 * @param chars the word's characters; `start`, `end` its offsets in `query`
 * @throws QuerySyntaxError for an unknown filter or a bad value
 */
export type FilterWordParser<F extends FilterBase> = (query: string, chars: WordChar[], start: number, end: number) => F | null;

/**
 * Parses a query of the hosted search into its syntax tree (`parseQueryWith` and the hosted
 * filters of query-filters.ts).
 * @param query the query string, e.g. `class:car>=2 -split:test (tag:day OR tag:dusk)`
 * @returns the root node; every node carries its source span
 * @throws QuerySyntaxError as `parseQueryWith`
 */
export function parseQuery(query: string): QueryNode<FilterNode> {
  return parseQueryWith(query, parseFilterWord);
}

/**
 * Parses a query into its syntax tree, reading filter words with `parseFilter`: the grammar and
 * its errors are every dialect's, the filters each one's own.
 * @returns the root node; every node carries its source span
 * @throws QuerySyntaxError pointing at the offending character: empty query, unbalanced
 *   parenthesis, dangling operator or minus, unterminated quote, unknown filter, bad filter value,
 *   a query longer than MAX_QUERY_LENGTH (pointing at the first character past it) or nested
 *   deeper than MAX_QUERY_DEPTH (pointing at the "(", NOT or minus that opens one level too many)
 */
export function parseQueryWith<F extends FilterBase>(query: string, parseFilter: FilterWordParser<F>): QueryNode<F> {
  if (query.length > MAX_QUERY_LENGTH) {
    throw new QuerySyntaxError(query, MAX_QUERY_LENGTH, `The query is longer than ${MAX_QUERY_LENGTH} characters (${query.length})`);
  }
  const tokens = tokenize(query);
  if (tokens.length === 0) throw new QuerySyntaxError(query, 0, 'The query is empty');
  const parser = new Parser(query, tokens, parseFilter);
  const root = parser.parseOr();
  const extra = parser.peek();
  if (extra !== undefined) {
    // parseOr stops only at the end or at a ")" that no "(" opened.
    throw new QuerySyntaxError(query, extra.start, 'Unmatched ")": no "(" opens it');
  }
  return root;
}

class Parser<F extends FilterBase> {
  private index = 0;
  private depth = 0;

  constructor(private readonly query: string, private readonly tokens: Token[], private readonly parseFilter: FilterWordParser<F>) {}

  peek(): Token | undefined {
    return this.tokens[this.index];
  }

  parseOr(): QueryNode<F> {
    const children = [this.parseAnd()];
    for (let token = this.peek(); token !== undefined && isBareWord(token, 'OR'); token = this.peek()) {
      this.index += 1;
      this.requireTermAfter(token, 'OR');
      children.push(this.parseAnd());
    }
    return children.length === 1 ? children[0] : { type: 'or', children, span: spanOf(children) };
  }

  /** One AND sequence; free-text words next to each other (no explicit AND) merge. */
  private parseAnd(): QueryNode<F> {
    const first = this.peek() as Token;
    if (!this.startsTerm(first)) {
      const reason = first.kind === ')' ? 'Unmatched ")": no "(" opens it' : `${wordText(wordChars(first))} needs a term before it`;
      throw new QuerySyntaxError(this.query, first.start, reason);
    }
    const children: QueryNode<F>[] = [];
    let previousIsWordText = false;
    let explicitAnd = false;
    for (let token = this.peek(); token !== undefined; token = this.peek()) {
      if (isBareWord(token, 'AND')) {
        this.index += 1;
        this.requireTermAfter(token, 'AND');
        explicitAnd = true;
        continue;
      }
      if (!this.startsTerm(token)) break;
      const node = this.parseUnary();
      const isWordText = token.kind === 'word' && node.type === 'text';
      const previous = children[children.length - 1];
      if (isWordText && previousIsWordText && !explicitAnd && previous.type === 'text') {
        children[children.length - 1] = mergeText(previous, node);
      } else {
        children.push(node);
      }
      previousIsWordText = isWordText;
      explicitAnd = false;
    }
    return children.length === 1 ? children[0] : { type: 'and', children, span: spanOf(children) };
  }

  private parseUnary(): QueryNode<F> {
    const token = this.peek() as Token;
    if (token.kind === '-' || isBareWord(token, 'NOT')) {
      this.index += 1;
      this.requireTermAfter(token, token.kind === '-' ? 'A minus' : 'NOT');
      const child = this.nested(token, () => this.parseUnary());
      return { type: 'not', child, span: { start: token.start, end: child.span.end } };
    }
    this.index += 1;
    return token.kind === '(' ? this.nested(token, () => this.parseGroup(token)) : this.parseWord(token);
  }

  /** Parses one nesting level opened by `opener`; throws when it is one too many. */
  private nested(opener: Token, parse: () => QueryNode<F>): QueryNode<F> {
    if (this.depth >= MAX_QUERY_DEPTH) {
      throw new QuerySyntaxError(this.query, opener.start, `Nested more than ${MAX_QUERY_DEPTH} levels deep (parentheses, NOT and minus)`);
    }
    this.depth += 1;
    try {
      return parse();
    } finally {
      this.depth -= 1;
    }
  }

  /** After "(": a non-empty OR expression and its ")". Errors point at the "(". */
  private parseGroup(open: Token): QueryNode<F> {
    const next = this.peek();
    if (next?.kind === ')') throw new QuerySyntaxError(this.query, open.start, 'Empty parentheses');
    if (next === undefined) throw new QuerySyntaxError(this.query, open.start, 'Unclosed parenthesis: add the matching ")"');
    const inner = this.parseOr();
    if (this.peek()?.kind !== ')') {
      throw new QuerySyntaxError(this.query, open.start, 'Unclosed parenthesis: add the matching ")"');
    }
    this.index += 1;
    return inner;
  }

  private parseWord(token: Token): QueryNode<F> {
    const chars = wordChars(token);
    const span = { start: token.start, end: token.end };
    const filter = this.parseFilter(this.query, chars, token.start, token.end);
    if (filter) return filter;
    if (isBareWord(token, '*')) return { type: 'all', span };
    const text = wordText(chars);
    if (text.trim() === '') throw new QuerySyntaxError(this.query, token.start, 'Empty quoted text');
    return { type: 'text', text, span };
  }

  /** A term can start here: "(", "-", NOT, or any word but AND and OR. */
  private startsTerm(token: Token): boolean {
    if (token.kind === '(' || token.kind === '-') return true;
    return token.kind === 'word' && !isBareWord(token, 'AND') && !isBareWord(token, 'OR');
  }

  /** Throws, pointing at `operator`, unless the next token starts a term. */
  private requireTermAfter(operator: Token, name: string): void {
    const next = this.peek();
    if (next !== undefined && this.startsTerm(next)) return;
    const found = next === undefined ? 'the query ends' : next.kind === ')' ? 'found ")"' : `found ${wordText(wordChars(next))}`;
    throw new QuerySyntaxError(this.query, operator.start, `${name} needs a term after it, but ${found}`);
  }
}

function wordChars(token: Token): WordChar[] {
  return token.kind === 'word' ? token.chars : [];
}

function spanOf<F extends FilterBase>(children: QueryNode<F>[]): Span {
  return { start: children[0].span.start, end: children[children.length - 1].span.end };
}

function mergeText(left: TextNode, right: TextNode): TextNode {
  return { type: 'text', text: `${left.text} ${right.text}`, span: { start: left.span.start, end: right.span.end } };
}

