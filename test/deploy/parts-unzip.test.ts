/**
 * The zip reader that takes Helm out of the layer packages (scripts/parts/unzip.ts), on archives
 * built here byte by byte: stored and deflated entries come back as they went in, and a damaged,
 * incomplete or foreign archive is refused with a message, never read wrong.
 */
import { crc32, deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { readZipEntry, zipEntries } from '../../scripts/parts/unzip.js';

interface Entry {
  readonly name: string;
  readonly data: Buffer;
  readonly deflate: boolean;
}

/** A zip archive (APPNOTE 4.3.6): local headers with their data, the central directory, its end record. */
function zip(entries: readonly Entry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name);
    const body = e.deflate ? deflateRawSync(e.data) : e.data;
    const fields = (h: Buffer, at: number) => {
      h.writeUInt16LE(e.deflate ? 8 : 0, at);
      h.writeUInt32LE(crc32(e.data), at + 6);
      h.writeUInt32LE(body.length, at + 10);
      h.writeUInt32LE(e.data.length, at + 14);
      h.writeUInt16LE(name.length, at + 18);
    };
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    fields(local, 8);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    fields(central, 10);
    central.writeUInt32LE((0o100755 << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, body);
    centrals.push(central, name);
    offset += local.length + name.length + body.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

const binary = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7919) % 251));
const archive = zip([
  { name: 'helm/', data: Buffer.alloc(0), deflate: false },
  { name: 'helm/helm', data: binary, deflate: true },
  { name: 'README', data: Buffer.from('stored as it is\n'), deflate: false },
]);

describe('readZipEntry', () => {
  it('reads deflated and stored entries back byte for byte, and lists every entry with its mode', () => {
    expect(readZipEntry(archive, 'helm/helm').equals(binary)).toBe(true);
    expect(readZipEntry(archive, 'README').toString()).toBe('stored as it is\n');
    expect(zipEntries(archive).map((e) => [e.name, e.size, (e.unixMode & 0o777).toString(8)])).toEqual([
      ['helm/', 0, '755'],
      ['helm/helm', binary.length, '755'],
      ['README', 16, '755'],
    ]);
  });

  it('refuses a missing entry, a damaged entry and what is not a zip archive', () => {
    expect(() => readZipEntry(archive, 'kubectl/kubectl')).toThrow('kubectl/kubectl is not in the zip archive');
    const damaged = Buffer.from(archive);
    // A byte of the stored entry's data, which no decompressor would notice: only its CRC-32 does.
    const at = damaged.indexOf('stored as it is');
    damaged.writeUInt8(damaged.readUInt8(at) ^ 0x20, at);
    expect(() => readZipEntry(damaged, 'README')).toThrow('CRC-32 mismatch');
    expect(() => readZipEntry(Buffer.from('#!/bin/sh\necho not a zip\n'), 'helm/helm')).toThrow('not a zip archive');
    // Cut short: the end record is gone.
    expect(() => readZipEntry(archive.subarray(0, archive.length - 30), 'helm/helm')).toThrow('not a zip archive');
  });
});
