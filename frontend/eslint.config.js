import js from '@eslint/js';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist', 'src/api/schema.d.ts'] },
  {
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    files: ['src/**/*.{ts,tsx}'],
    languageOptions: { globals: globals.browser },
    plugins: { 'react-hooks': reactHooks },
    rules: {
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'warn',
      // A store read while drawing does not subscribe: the part would not redraw when it changes.
      // Subscribe with a selector (useDesigner(s => …)); event handlers may read the store.
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "JSXExpressionContainer CallExpression[callee.property.name='getState']:not(JSXExpressionContainer :function CallExpression)",
          message: 'no store.getState() while drawing: subscribe with a selector',
        },
      ],
    },
  },
  {
    extends: [js.configs.recommended],
    files: ['scripts/**/*.mjs', 'e2e/**/*.mjs'],
    // Browser scripts run Node code that hands functions to the page (page.evaluate).
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
);
