import bcrypt from 'bcryptjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BasicAuth, MAX_PENDING_VERIFICATIONS, parseBasic } from '../../src/server/auth.js';

const PASSWORD = 'pa:ss wörd';
const HASH = bcrypt.hashSync(PASSWORD, 4);
const header = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

afterEach(() => vi.restoreAllMocks());

describe('BasicAuth', () => {
  it('accepts the right password, refuses a wrong one, an unknown user and a missing header', async () => {
    const auth = new BasicAuth(new Map([['alice', HASH]]));
    expect(await auth.check(header('alice', PASSWORD))).toBe('ok');
    expect(await auth.check(header('alice', 'wrong'))).toBe('unauthorized');
    expect(await auth.check(header('bob', PASSWORD))).toBe('unauthorized');
    expect(await auth.check(undefined)).toBe('unauthorized');
    expect(await auth.check('Bearer abc')).toBe('unauthorized');
  });

  it('pays bcrypt once per verified credential, and again for every wrong one', async () => {
    const compare = vi.spyOn(bcrypt, 'compare');
    const auth = new BasicAuth(new Map([['alice', HASH]]));
    for (let i = 0; i < 5; i++) expect(await auth.check(header('alice', PASSWORD))).toBe('ok');
    expect(compare).toHaveBeenCalledTimes(1);
    expect(await auth.check(header('alice', 'wrong'))).toBe('unauthorized');
    expect(await auth.check(header('alice', 'wrong'))).toBe('unauthorized');
    expect(compare).toHaveBeenCalledTimes(3);
    // An unknown user pays it too (against a dummy hash), so it cannot be told apart by time.
    expect(await auth.check(header('mallory', PASSWORD))).toBe('unauthorized');
    expect(compare).toHaveBeenCalledTimes(4);
  });

  it('keeps no plaintext password: only 32-byte digests', async () => {
    const auth = new BasicAuth(new Map([['alice', HASH]]));
    await auth.check(header('alice', PASSWORD));
    const held = (auth as unknown as { verified: Map<string, Buffer> }).verified;
    expect([...held.values()].map((d) => d.length)).toEqual([32]);
    expect([...held.values()].some((d) => d.toString('utf8').includes(PASSWORD))).toBe(false);
  });

  it(`answers busy beyond ${MAX_PENDING_VERIFICATIONS} bcrypt checks at once`, async () => {
    const auth = new BasicAuth(new Map([['alice', HASH]]));
    const outcomes = await Promise.all(Array.from({ length: MAX_PENDING_VERIFICATIONS + 3 }, () => auth.check(header('alice', 'wrong'))));
    expect(outcomes.filter((o) => o === 'busy')).toHaveLength(3);
    expect(outcomes.filter((o) => o === 'unauthorized')).toHaveLength(MAX_PENDING_VERIFICATIONS);
  });
});

describe('parseBasic', () => {
  it.each([
    [header('a', 'b:c'), { user: 'a', password: 'b:c' }],
    [header('a', ''), { user: 'a', password: '' }],
    ['basic ' + Buffer.from('u:p').toString('base64'), { user: 'u', password: 'p' }],
    ['Basic bm9jb2xvbg==', undefined], // "nocolon"
    ['Basic', undefined],
    ['Digest abc', undefined],
  ])('%s', (input, expected) => {
    expect(parseBasic(input)).toEqual(expected);
  });
});
