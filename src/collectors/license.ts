/** License area (GET …/system/metrics/license). */
import type { Collector } from './types.js';
import { SampleSet, label, preview } from './emit.js';
import { parseDay } from '../time.js';

export const collectLicense: Collector<'license'> = (record, ctx) => {
  const out = new SampleSet(ctx);
  if (record.licenseType != null || record.customerName != null) {
    out.info('cmdb_license_info', { license_type: label(record.licenseType), customer_name: label(record.customerName) });
  }
  if (record.expireDate != null && record.expireDate !== '') {
    const expiry = parseDay(record.expireDate);
    if (expiry === undefined) ctx.debug('expireDate is not a date; sample dropped', { field: 'expireDate', value: preview(record.expireDate) });
    out.gauge('cmdb_license_expiry_timestamp_seconds', {}, expiry);
  }
  // cmdb_license_days_until_expiry is not emitted here: it depends on the scrape time, so the
  // store derives it from the expiry with daysUntilExpiry() (src/time.ts).
  return out.finish([]);
};
