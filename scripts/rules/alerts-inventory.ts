/**
 * Alerts on the inventory itself: license expiry, a sudden drop in asset or user counts, the
 * opt-in rise of a saved query's count between two rebuilds, and a saved query refused.
 */
import { STACK, alertFactory, percentBelow, selector } from './model.js';
import type { AlertRule, RuleGroup, Thresholds } from './model.js';

export function inventoryAlerts(t: Thresholds): RuleGroup<AlertRule> {
  const alert = alertFactory(t);
  const days = selector(t, 'cmdb_license_days_until_expiry');
  const left = '{{ $value | printf "%.1f" }} days';
  const dropPercent = percentBelow(t.inventoryDropRatio);
  const drop = (kind: 'assets' | 'users', name: string) =>
    alert(
      name,
      'warning',
      `${selector(t, `cmdb_${kind}`)}\n  < ${t.inventoryDropRatio} * ${selector(t, `cmdb_${kind}_avg_30d`)}`,
      `The number of CMDB ${kind} fell sharply.`,
      `Stack {{ $labels.stack }} has {{ $value }} ${kind}, more than ${dropPercent}% below its 30-day average: a connector may have stopped delivering or a clean-up removed too much.`,
    );
  return {
    name: 'cmdb-inventory.alerts',
    rules: [
      // The three license bands are exclusive, so exactly one of them fires at a time.
      alert(
        'CmdbLicenseExpiresSoon',
        'warning',
        `${days} <= ${t.licenseWarningDays}\nand\n${days} > ${t.licenseCriticalDays}`,
        'The CMDB license expires soon.',
        `The CMDB license of ${STACK} expires in ${left} (warning within ${t.licenseWarningDays} days). Renew it before the service stops ingesting data.`,
      ),
      alert(
        'CmdbLicenseExpiresVerySoon',
        'critical',
        `${days} <= ${t.licenseCriticalDays}\nand\n${days} > 0`,
        'The CMDB license expires within days.',
        `The CMDB license of ${STACK} expires in ${left} (critical within ${t.licenseCriticalDays} days). Renew it now.`,
      ),
      alert(
        'CmdbLicenseExpired',
        'critical',
        `${days} <= 0`,
        'The CMDB license has expired.',
        `The CMDB license of ${STACK} has expired (days until expiry: {{ $value | printf "%.1f" }}). Renew it; the service may stop ingesting data.`,
      ),
      drop('assets', 'CmdbAssetsDropped'),
      drop('users', 'CmdbUsersDropped'),
      // Opt-in per saved query (alertRiseRatio in the exporter's configuration, exported as
      // cmdb_query_alert_rise_ratio): only queries that set it have the series this joins with.
      // The value is the rise as a share of the count at the rebuild before (+Inf from 0).
      alert(
        'CmdbQueryCountRose',
        'warning',
        `(\n  ${selector(t, 'cmdb_query_records')}\n  - ${selector(t, 'cmdb_query_previous_records')}\n)\n/ ${selector(t, 'cmdb_query_previous_records')}\n> ${selector(t, 'cmdb_query_alert_rise_ratio')}`,
        'The count of a saved CMDB query rose.',
        `The saved query {{ $labels.query }} of stack {{ $labels.stack }} counts {{ $value | humanizePercentage }} more records than at the rebuild before, above the share it opted in to alert on (alertRiseRatio).`,
      ),
      // Info: the configuration's to fix, shown on the status page and the dashboard, notified to no one.
      alert(
        'CmdbQueryRefused',
        'info',
        `${selector(t, 'cmdb_query_refused')} == 1`,
        'A saved CMDB query is refused and not sent.',
        `The saved query {{ $labels.query }} of stack {{ $labels.stack }} does not fit the stack's field metadata (an unknown field, a type that is not the field's, a quoted number, an operator its type does not take, or a windowed Datetime operator), so the exporter does not send it and exports no count for it: the service would answer a confident 0. The exporter log and the status page name the criterion and what to write instead; fix the query under queries and reload.`,
      ),
    ],
  };
}
