/**
 * How a stack authenticates: clientId with exactly one of secret / secretFile, or exactly one of
 * token / tokenFile. The same rules serve the YAML stacks and the environment stack; only the
 * names differ (`secret` there, `CMDB_SECRET` here).
 */
import type { StackAuth } from './types.js';
import { tokenText } from './fields.js';
import { readSecretFile } from './files.js';
import type { IssueList } from './issues.js';

export const CREDENTIAL_KEYS = ['clientId', 'secret', 'secretFile', 'token', 'tokenFile'] as const;
export type CredentialKey = (typeof CREDENTIAL_KEYS)[number];

export interface CredentialNaming {
  /** The name the user wrote: `secret` or `CMDB_SECRET`. */
  name(key: CredentialKey): string;
  /** The issue path: `stacks[1].secret` or `CMDB_SECRET`. */
  path(key: CredentialKey): string;
  /** The issue path for the stack as a whole. */
  stack: string;
}

/** Which way the stack authenticates, or undefined after reporting why it has none or several. */
export function credentialKind(
  has: (key: CredentialKey) => boolean,
  naming: CredentialNaming,
  issues: IssueList,
): 'client' | 'token' | undefined {
  const n = naming.name;
  const client = has('clientId') || has('secret') || has('secretFile');
  const token = has('token') || has('tokenFile');
  let valid = true;
  const report = (path: string, message: string): void => {
    issues.add(path, message);
    valid = false;
  };
  if (has('secret') && has('secretFile')) {
    report(naming.path('secretFile'), `set only one of ${n('secret')} and ${n('secretFile')}`);
  }
  if (has('token') && has('tokenFile')) {
    report(naming.path('tokenFile'), `set only one of ${n('token')} and ${n('tokenFile')}`);
  }
  if (client && token) {
    report(
      naming.path(has('token') ? 'token' : 'tokenFile'),
      `set either ${n('clientId')} with ${n('secret')} or ${n('secretFile')}, or ${n('token')} or ${n('tokenFile')}, not both`,
    );
  } else if (client && !has('clientId')) {
    report(naming.path('clientId'), `is required when ${n('secret')} or ${n('secretFile')} is set`);
  } else if (client && !has('secret') && !has('secretFile')) {
    report(naming.path('secret'), `${n('clientId')} needs a secret: set ${n('secret')} or ${n('secretFile')}`);
  } else if (!client && !token) {
    report(
      naming.stack,
      `no credentials: set ${n('clientId')} with ${n('secret')} or ${n('secretFile')}, or set ${n('token')} or ${n('tokenFile')}`,
    );
  }
  if (!valid) return undefined;
  return client ? 'client' : 'token';
}

export interface CredentialValues {
  clientId?: string | undefined;
  secret?: string | undefined;
  secretFile?: string | undefined;
  token?: string | undefined;
  tokenFile?: string | undefined;
}

/** Build the auth of a stack whose credentials passed credentialKind, reading files as needed. */
export function loadAuth(
  kind: 'client' | 'token',
  values: CredentialValues,
  clientIdKey: string,
  naming: CredentialNaming,
  issues: IssueList,
): StackAuth | undefined {
  if (kind === 'client') {
    let secret = values.secret;
    if (values.secretFile !== undefined) {
      const r = readSecretFile(values.secretFile);
      if (!r.ok) issues.add(naming.path('secretFile'), r.message);
      secret = r.ok ? r.text : undefined;
    }
    issues.secret(secret);
    if (values.clientId === undefined || secret === undefined) return undefined;
    return { kind: 'client', clientId: values.clientId, secret, clientIdKey };
  }
  if (values.tokenFile === undefined) {
    issues.secret(values.token);
    return values.token === undefined ? undefined : { kind: 'token', token: values.token };
  }
  const r = readSecretFile(values.tokenFile);
  if (!r.ok) {
    issues.add(naming.path('tokenFile'), r.message);
    return undefined;
  }
  issues.secret(r.text);
  const checked = tokenText(r.text);
  if (!checked.ok) {
    issues.add(naming.path('tokenFile'), `the token in file ${JSON.stringify(values.tokenFile)} ${checked.message}`);
    return undefined;
  }
  return { kind: 'token', token: r.text, tokenFile: values.tokenFile };
}
