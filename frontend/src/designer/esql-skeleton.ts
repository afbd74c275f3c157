/** The ESQL module a new ESQL-running node (Compute, Filter, Database) starts from, as ACE's Toolkit generates it. */
import { esqlModule, type NodeSpec } from './spec';

/** An ESQL identifier from a flow or node name: letters, digits and _ only, not starting with a digit. */
export function esqlIdentifier(name: string): string {
  const id = name.trim().replace(/[^A-Za-z0-9_]/g, '_');
  if (!id) return '_';
  return /^[0-9]/.test(id) ? `_${id}` : id;
}

/** The module's name: the node's `module` property when set, else FlowName_NodeName as the Toolkit names it. */
export function moduleName(flowName: string, nodeName: string, module?: unknown): string {
  if (typeof module === 'string' && module.trim()) return module.trim();
  return `${esqlIdentifier(flowName)}_${esqlIdentifier(nodeName)}`;
}

/** The module skeleton for a node of this spec (the kind of module its spec declares), or null
 * when the type runs no ESQL module. */
export function moduleSkeleton(spec: NodeSpec | undefined, flowName: string, nodeName: string, module?: unknown): string | null {
  const kind = esqlModule(spec);
  if (!kind) return null;
  const name = moduleName(flowName, nodeName, module);
  if (kind === 'COMPUTE')
    return [
      `CREATE COMPUTE MODULE ${name}`,
      '\tCREATE FUNCTION Main() RETURNS BOOLEAN',
      '\tBEGIN',
      '\t\tCALL CopyEntireMessage();',
      '\t\tRETURN TRUE;',
      '\tEND;',
      '',
      '\tCREATE PROCEDURE CopyEntireMessage() BEGIN',
      '\t\tSET OutputRoot = InputRoot;',
      '\tEND;',
      'END MODULE;',
      '',
    ].join('\n');
  return [
    `CREATE ${kind} MODULE ${name}`,
    '\tCREATE FUNCTION Main() RETURNS BOOLEAN',
    '\tBEGIN',
    '\t\tRETURN TRUE;',
    '\tEND;',
    'END MODULE;',
    '',
  ].join('\n');
}
