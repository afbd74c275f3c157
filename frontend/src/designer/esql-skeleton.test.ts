import { describe, expect, it } from 'vitest';
import { esqlIdentifier, moduleName, moduleSkeleton } from './esql-skeleton';
import { SPECS } from './fixtures';

const squash = (s: string | null) => (s ?? '').replace(/\s+/g, ' ').trim();

describe('moduleSkeleton', () => {
  it('gives a Compute node the Toolkit module that copies the entire message', () => {
    expect(squash(moduleSkeleton(SPECS.Compute, 'OrderFlow', 'Transform'))).toBe(
      'CREATE COMPUTE MODULE OrderFlow_Transform CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN CALL CopyEntireMessage(); ' +
        'RETURN TRUE; END; CREATE PROCEDURE CopyEntireMessage() BEGIN SET OutputRoot = InputRoot; END; END MODULE;',
    );
  });

  it('gives Filter and Database nodes their own kind of module with Main returning TRUE', () => {
    expect(squash(moduleSkeleton(SPECS.Filter, 'F', 'Check'))).toBe(
      'CREATE FILTER MODULE F_Check CREATE FUNCTION Main() RETURNS BOOLEAN BEGIN RETURN TRUE; END; END MODULE;',
    );
    expect(squash(moduleSkeleton(SPECS.Database, 'F', 'Db'))).toMatch(/^CREATE DATABASE MODULE F_Db .* RETURN TRUE; END; END MODULE;$/);
  });

  it('offers nothing for a node type that runs no ESQL, or one the server does not know', () => {
    expect(moduleSkeleton(SPECS.MQInput, 'F', 'In')).toBeNull();
    expect(moduleSkeleton(undefined, 'F', 'In')).toBeNull();
  });

  it('follows the kind of module the spec declares, whatever the type is called', () => {
    const plugin = { ...SPECS.Compute, type: 'AcmeCheck', extra: { esqlProperty: 'esql', esqlModule: 'FILTER' } };
    expect(squash(moduleSkeleton(plugin, 'F', 'Check'))).toMatch(/^CREATE FILTER MODULE F_Check /);
  });

  it('names the module from the node module property when it is set', () => {
    expect(moduleName('F', 'N', 'Mine')).toBe('Mine');
    expect(moduleName('F', 'N', '  ')).toBe('F_N');
  });

  it('makes identifiers of names holding spaces, dots or a leading digit', () => {
    expect(esqlIdentifier('My flow.v2')).toBe('My_flow_v2');
    expect(esqlIdentifier('1st')).toBe('_1st');
    expect(moduleSkeleton(SPECS.Compute, 'Order Flow', 'Compute 1')).toContain('CREATE COMPUTE MODULE Order_Flow_Compute_1\n');
  });
});
