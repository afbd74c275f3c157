import { describe, expect, it } from 'vitest';
import { esqlIdentifier, moduleName, moduleSkeleton } from './esql-skeleton';

const squash = (s: string | null) => (s ?? '').replace(/\s+/g, ' ').trim();

describe('moduleSkeleton', () => {
  it('gives a Compute node the Toolkit module that copies the entire message', () => {
    expect(squash(moduleSkeleton('Compute', 'OrderFlow', 'Transform'))).toBe(
      'CREATE COMPUTE MODULE OrderFlow_Transform CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN CALL CopyEntireMessage(); ' +
        'RETURN TRUE; END; CREATE PROCEDURE CopyEntireMessage() BEGIN SET OutputRoot = InputRoot; END; END MODULE;',
    );
  });

  it('gives Filter and Database nodes their own kind of module with Main returning TRUE', () => {
    expect(squash(moduleSkeleton('Filter', 'F', 'Check'))).toBe(
      'CREATE FILTER MODULE F_Check CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN RETURN TRUE; END; END MODULE;',
    );
    expect(squash(moduleSkeleton('Database', 'F', 'Db'))).toMatch(/^CREATE DATABASE MODULE F_Db .* RETURN TRUE; END; END MODULE;$/);
  });

  it('offers nothing for a node type that runs no ESQL', () => {
    expect(moduleSkeleton('MQInput', 'F', 'In')).toBeNull();
  });

  it('names the module from the node module property when it is set', () => {
    expect(moduleName('F', 'N', 'Mine')).toBe('Mine');
    expect(moduleName('F', 'N', '  ')).toBe('F_N');
  });

  it('makes identifiers of names holding spaces, dots or a leading digit', () => {
    expect(esqlIdentifier('My flow.v2')).toBe('My_flow_v2');
    expect(esqlIdentifier('1st')).toBe('_1st');
    expect(moduleSkeleton('Compute', 'Order Flow', 'Compute 1')).toContain('CREATE COMPUTE MODULE Order_Flow_Compute_1\n');
  });
});
