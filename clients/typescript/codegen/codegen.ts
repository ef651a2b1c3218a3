// GraphQL Code Generator's configuration: typed documents for the
// operations in src/graphql, checked against the server's schema. Run it
// with `npm run codegen` (after codegen/fragments.mjs); its output in
// src/gql is committed, and scripts/check-generated.sh fails when it is stale.
import type { CodegenConfig } from '@graphql-codegen/cli';

const config: CodegenConfig = {
  schema: '../../schema.graphqls',
  documents: ['src/graphql/*.graphql'],
  ignoreNoDocuments: false,
  generates: {
    'src/gql/': {
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: {
        // Documents as plain strings: the client needs no GraphQL parser at run time.
        documentMode: 'string',
        enumType: 'string-literal',
        useTypeImports: true,
        importExtension: '.js',
        strictScalars: true,
        scalars: {
          Decimal: { input: 'string | number', output: 'string' },
          Time: { input: 'string', output: 'string' },
        },
      },
    },
  },
};

export default config;
