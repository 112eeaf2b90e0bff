/**
 * Files named by the configuration (secretFile, tokenFile, tls.*File), read once at load. Messages
 * name the file and the OS error code, never any of the content.
 */
import { closeSync, openSync, readSync } from 'node:fs';

const SECRET_MAX_BYTES = 64 * 1024;
const PEM_MAX_BYTES = 1024 * 1024;

type Read = { ok: true; text: string } | { ok: false; message: string };

function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'read error';
}

/** Read at most `maxBytes`: a path to a device or a huge file must not hang or exhaust memory. */
function readBounded(file: string, maxBytes: number): Read {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    return { ok: false, message: `cannot read file ${JSON.stringify(file)}: ${errorCode(err)}` };
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
    return { ok: false, message: `cannot read file ${JSON.stringify(file)}: ${errorCode(err)}` };
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
