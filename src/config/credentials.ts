/**
 * How a stack authenticates: clientId with exactly one of secret / secretFile, or exactly one of
 * token / tokenFile. The same rules serve the YAML stacks and the environment stack; only the
 * names differ (`secret` there, `CMDB_SECRET` here).
 *
 * Also the files named by the configuration (secretFile, tokenFile, tls.*File), read once at load.
 * Messages name the file and the OS error code, never any of the content.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { errorCode } from '../errors.js';
import type { StackAuth } from './types.js';
import { tokenText } from './fields.js';
import type { IssueList } from './issues.js';
import type { CREDENTIALS, Resolved } from './rules.js';

export type CredentialKey = keyof typeof CREDENTIALS;

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

/** Build the auth of a stack whose credentials passed credentialKind, reading files as needed. */
export function loadAuth(
  kind: 'client' | 'token',
  values: Resolved<typeof CREDENTIALS>,
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

const SECRET_MAX_BYTES = 64 * 1024;
const PEM_MAX_BYTES = 1024 * 1024;

type Read = { ok: true; text: string } | { ok: false; message: string };

/** Read at most `maxBytes`: a path to a device or a huge file must not hang or exhaust memory. */
function readBounded(file: string, maxBytes: number): Read {
  const unreadable = (err: unknown): Read => ({
    ok: false,
    message: `cannot read file ${JSON.stringify(file)}: ${errorCode(err) ?? 'read error'}`,
  });
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    return unreadable(err);
  }
  try {
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
      if (length > maxBytes) {
        return { ok: false, message: `file ${JSON.stringify(file)} is larger than ${maxBytes / 1024} KiB; is it the right file?` };
      }
    }
    return { ok: true, text: buffer.toString('utf8', 0, length) };
  } catch (err) {
    return unreadable(err);
  } finally {
    closeSync(fd);
  }
}

/** A secret or token file: trailing line breaks removed; an empty file is an error. */
export function readSecretFile(file: string): Read {
  const r = readBounded(file, SECRET_MAX_BYTES);
  if (!r.ok) return r;
  const text = r.text.replace(/[\r\n]+$/, '');
  return text.trim() === '' ? { ok: false, message: `file ${JSON.stringify(file)} is empty` } : { ok: true, text };
}

const PEM_MARKERS = {
  certificate: /-----BEGIN CERTIFICATE-----/,
  'private key': /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
} as const;

/** A PEM file holding at least one certificate, or a private key. */
export function readPemFile(file: string, kind: keyof typeof PEM_MARKERS): Read {
  const r = readBounded(file, PEM_MAX_BYTES);
  if (!r.ok) return r;
  if (!PEM_MARKERS[kind].test(r.text)) {
    return { ok: false, message: `file ${JSON.stringify(file)} does not hold a PEM ${kind}` };
  }
  return r;
}
