// ESLint 9 flat config (https://eslint.org/docs/latest/use/configure/configuration-files), run by
// `npm run lint`, which `npm test` runs first (docs/ARCHITECTURE.md, "Layers"). typescript-eslint's
// recommended rules without type information, which keeps the lint to seconds; the house style
// (2 spaces, single quotes, semicolons, trailing commas in multi-line lists) is checked by
// ESLint Stylistic's rules rather than rewritten by a formatter. `npx eslint --fix` applies them.
import js from '@eslint/js';
import stylistic from '@stylistic/eslint-plugin';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', '.tap/', 'native-bench/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      // Dropping fields by destructuring the rest (`const { draft: _draft, ...rest } = event`) is the house idiom.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
      // Header values, NATS subjects and settings are checked for control characters on purpose.
      'no-control-regex': 'off',
    },
  },
  {
    files: ['test/**', 'scripts/lib/**'],
    rules: {
      // Tests and the harness read the API's JSON answers untyped: `any` there is the wire JSON. src/ keeps the rule.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['page/**'],
    languageOptions: { globals: globals.browser },
  },
  {
    // The store keeps the log's layout to itself (docs/ARCHITECTURE.md, "Layers"): readers
    // outside src/store open files with StoreView.openFile, never with `getFile` (a file's segment
    // and offset). Its LMDB handles are protected members, or behind the `storeHandles` symbol
    // that only src/store imports. Tests may reach in.
    files: ['src/**'],
    ignores: ['src/store/**'],
    rules: {
      'no-restricted-syntax': ['error', {
        selector: 'MemberExpression[property.name="getFile"][object.type!="ThisExpression"]',
        message: 'Only src/store reads where files live in the log; use StoreView.openFile (docs/ARCHITECTURE.md, "Layers").',
      }],
    },
  },
  {
    // Small files and functions (docs/ARCHITECTURE.md, "Layers"): no file of src/ over 400 lines,
    // no function over 60 lines of code (comments and blank lines aside). Generated code aside.
    files: ['src/**'],
    ignores: ['src/**/generated/**'],
    rules: {
      'max-lines': ['error', { max: 400 }],
      'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    plugins: { '@stylistic': stylistic },
    rules: {
      '@stylistic/indent': ['error', 2],
      '@stylistic/quotes': ['error', 'single', { avoidEscape: true, allowTemplateLiterals: 'always' }],
      '@stylistic/semi': ['error', 'always'],
      '@stylistic/semi-spacing': 'error',
      '@stylistic/comma-dangle': ['error', 'always-multiline'],
      '@stylistic/comma-spacing': 'error',
      '@stylistic/arrow-parens': ['error', 'always'],
      '@stylistic/brace-style': ['error', '1tbs', { allowSingleLine: true }],
      '@stylistic/object-curly-spacing': ['error', 'always'],
      '@stylistic/key-spacing': 'error',
      '@stylistic/keyword-spacing': 'error',
      '@stylistic/space-infix-ops': 'error',
      '@stylistic/space-before-blocks': 'error',
      '@stylistic/type-annotation-spacing': 'error',
      '@stylistic/member-delimiter-style': 'error',
      '@stylistic/no-trailing-spaces': 'error',
      '@stylistic/no-multiple-empty-lines': ['error', { max: 1 }],
      '@stylistic/no-tabs': 'error',
      '@stylistic/eol-last': 'error',
      // No max-len: about 2,000 lines run past 120 columns, and rewrapping them is churn, not clarity.
    },
  },
);
