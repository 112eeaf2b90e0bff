import { describe, expect, it } from 'vitest';
import { LicenseRecordSchema } from '../../src/api/schemas.js';
import { collectLicense } from '../../src/collectors/license.js';
import { collect, context, find, fixture, iso, validated, valueOf } from './helpers.js';

const run = (file: string) => {
  const ctx = context();
  const samples = collect(collectLicense, validated(LicenseRecordSchema, fixture(`license/${file}`)), ctx);
  return { samples, ctx };
};

describe('license collector', () => {
  it.each<[string, string, Record<string, string> | undefined, number | undefined]>([
    ['type, customer and expiry day at 00:00:00 UTC', 'license.json', { license_type: 'FULL', customer_name: 'Acme Corp' }, iso('2025-12-31T00:00:00Z')],
    ['a leap day and hostile label text passed through unchanged', 'license-hostile.json', { license_type: 'TRIAL\n', customer_name: 'Qualys "EU" \\ line1\nline2 — Überwachung ✓ {a="b"}' }, iso('2024-02-29T00:00:00Z')],
    ['a full timestamp as expireDate inside a data envelope', 'license-timestamp.json', { license_type: 'FULL', customer_name: 'Acme' }, iso('2025-12-30T23:00:00Z')],
    ['an impossible expiry date drops only the expiry sample', 'license-bad-date.json', { license_type: 'FULL', customer_name: 'Acme' }, undefined],
    ['an expiry without type or customer gives no info sample', 'license-expiry-only.json', undefined, iso('2025-01-01T00:00:00Z')],
  ])('%s', (_name, file, info, expiry) => {
    const { samples } = run(file);
    const infos = find(samples, 'cmdb_license_info');
    if (info) {
      expect(infos).toEqual([{ name: 'cmdb_license_info', labels: info, value: 1 }]);
    } else expect(infos).toEqual([]);
    expect(valueOf(samples, 'cmdb_license_expiry_timestamp_seconds')).toBe(expiry);
  });

  it('logs the unparseable expireDate at debug when it drops the sample', () => {
    const { ctx } = run('license-bad-date.json');
    expect(ctx.debugCalls).toHaveLength(1);
    expect(ctx.debugCalls[0]?.fields).toMatchObject({ field: 'expireDate', value: '2025-02-30' });
  });

  it('never emits cmdb_license_days_until_expiry (the store computes it at scrape time)', () => {
    const { samples } = run('license.json');
    expect(find(samples, 'cmdb_license_days_until_expiry')).toEqual([]);
  });
});
