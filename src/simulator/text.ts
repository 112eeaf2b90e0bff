/**
 * Names and texts the simulated CMDB uses. Some are deliberately hostile but legal (quotes,
 * backslashes, newlines, non-ASCII): an exporter must escape them in labels. Planted secrets go only
 * into free-text fields that the exporter must never turn into labels.
 */
import { PLANTED_SECRETS } from './api.js';

export const HOSTILE_DISPLAY_NAME = 'Lab "East" \\ Zürich\nWing';
export const HOSTILE_PROFILE_NAME = 'prod "EU" \\ Köln';
export const HOSTILE_ACTION_NAME = 'Nightly "critical" report \\ Zürich\nfinance';
export const CUSTOMER_NAME = 'Müller & Söhne "Global" \\ Industrie\nGmbH';

export interface ConnectorTemplate {
  bridge: string;
  display: string;
  platform: string;
  technology: string;
  /** Merger connectors are internal: one row per run with `profile: null`. */
  merger?: boolean;
  /** Profile sent as a plain string instead of an object. */
  stringProfile?: boolean;
  /** An outbound Scheduled Action (platform action): profile is the Action's name. */
  action?: boolean;
  /** Rows keep start_time, end_time and duration_minutes (the documented shape, rare on the real service). */
  timed?: boolean;
  /** Runs of the first profile are often filed under "Default profile". */
  defaultProfileRuns?: boolean;
}

export const CONNECTOR_TEMPLATES: readonly ConnectorTemplate[] = [
  { bridge: 'crowdstrike_falcon', display: 'CrowdStrike Falcon', platform: 'api', technology: 'rest' },
  { bridge: 'servicenow_cmdb', display: 'ServiceNow CMDB', platform: 'api', technology: 'rest' },
  { bridge: 'microsoft_intune', display: 'Microsoft Intune', platform: 'api', technology: 'graph', stringProfile: true },
  { bridge: 'active_directory', display: 'Active Directory', platform: 'ldap', technology: 'ldaps', timed: true },
  { bridge: 'lab_inventory_db', display: HOSTILE_DISPLAY_NAME, platform: 'database', technology: 'postgresql', timed: true },
  { bridge: 'vmware_vcenter', display: 'VMware vCenter', platform: 'api', technology: 'soap' },
  { bridge: 'Lucidum Asset Merger', display: 'Lucidum Asset Merger', platform: 'ML-ENGINE', technology: 'merge', merger: true },
  { bridge: 'aws_ec2', display: 'AWS EC2', platform: 'aws', technology: 'aws-sdk', defaultProfileRuns: true },
  { bridge: 'hr_export_csv', display: 'HR export (CSV über SFTP)', platform: 'file', technology: 'csv' },
  { bridge: 'qualys_vm', display: 'Qualys VM', platform: 'api', technology: 'rest' },
  { bridge: 'sccm_sql', display: 'SCCM', platform: 'database', technology: 'mssql', timed: true },
  { bridge: 'webhook', display: 'Webhook', platform: 'action', technology: 'http', action: true },
  { bridge: 'okta_directory', display: 'Okta', platform: 'api', technology: 'rest', stringProfile: true },
  { bridge: 'jamf_pro', display: 'Jamf Pro', platform: 'api', technology: 'rest' },
  { bridge: 'azure_entra_id', display: 'Microsoft Entra ID', platform: 'cloud', technology: 'graph' },
  { bridge: 'Lucidum User Merger', display: 'Lucidum User Merger', platform: 'ML-ENGINE', technology: 'merge', merger: true },
  { bridge: 'tenable_io', display: 'Tenable.io', platform: 'api', technology: 'rest' },
  { bridge: 'snipe_it', display: 'Snipe-IT', platform: 'api', technology: 'rest' },
  { bridge: 'asset_sheet_xlsx', display: 'Asset sheet (XLSX)', platform: 'file', technology: 'xlsx' },
];

export const PROFILE_TEMPLATES: ReadonlyArray<readonly [string, string]> = [
  ['prod', 'Production'],
  ['staging', 'Staging'],
  [HOSTILE_PROFILE_NAME, 'Produktion "EU" \\ Köln\nRZ 2'],
  ['us-east', 'US East'],
  ['lab', 'Lab'],
  ['dr-site', 'Disaster recovery'],
];

export const EXPECTED_FIELDS = [
  'hostname',
  'ip_address',
  'mac_address',
  'os',
  'os_version',
  'serial_number',
  'owner',
  'last_seen',
  'location',
  'model',
] as const;

/** Source-side names or expressions, as a connector's mapping shows them. */
export const RAW_FIELD_EXPRESSIONS: Record<string, string> = {
  hostname: 'device.hostname',
  ip_address: '$.network.interfaces[0].ipv4',
  mac_address: "lower(replace(device.mac, '-', ':'))",
  os: 'device.os.name',
  os_version: "concat(device.os.major, '.', device.os.minor)",
  serial_number: 'hw.serial',
  owner: 'assignment.user.upn',
  last_seen: 'to_epoch(device.lastSeen)',
  location: 'site.name',
  model: 'hw.model',
};

export const INGESTION_TASKS: ReadonlyArray<readonly [string, string]> = [
  ['extract_assets', 'cmdb/ingest-extract'],
  ['extract_users', 'cmdb/ingest-extract'],
  ['normalize_records', 'cmdb/ingest-normalize'],
  ['merge_entities', 'cmdb/ingest-merge'],
  ['compute_relations', 'cmdb/ingest-graph'],
  ['load_cmdb', 'cmdb/ingest-load'],
  ['update_metrics', 'cmdb/ingest-metrics'],
  ['cleanup_staging', 'cmdb/ingest-cleanup'],
];

export interface ActionTemplate {
  name: string;
  type: string;
  typeDisplay: string;
  group: string;
  description: string;
}

export const ACTION_TEMPLATES: readonly ActionTemplate[] = [
  { name: 'Weekly asset report', type: 'send_email_report', typeDisplay: 'Send Email Report', group: 'Reporting', description: 'Mails the asset summary to IT operations' },
  { name: 'Open tickets for unmanaged devices', type: 'create_ticket', typeDisplay: 'Create Ticket', group: 'Remediation', description: '' },
  { name: HOSTILE_ACTION_NAME, type: 'send_email_report', typeDisplay: 'Send Email Report', group: 'Reporting', description: 'Für die Geschäftsleitung' },
  { name: 'Tag EOL operating systems', type: 'tag_assets', typeDisplay: 'Tag Assets', group: 'Hygiene', description: 'Adds the eol tag' },
  { name: 'Sync owners to HR', type: 'webhook', typeDisplay: 'Webhook', group: 'Integration', description: '' },
  { name: 'Export to SIEM', type: 'export_records', typeDisplay: 'Export Records', group: 'Integration', description: 'CEF export to the SIEM collector' },
  { name: 'Notify stale users', type: 'send_email_report', typeDisplay: 'Send Email Report', group: 'Hygiene', description: '' },
];

/** Tracked names: one with `&`, one with a space, one non-ASCII (they travel in a query string). */
export const TRACKED_ASSETS = ['R&D-LAPTOP-0042', 'web server 01', 'Zürich-FS-01', 'db-prod-03'] as const;
export const TRACKED_USERS = ['jürgen.weiß@example.com', 'svc backup & restore', 'ana.lopez'] as const;

export const ASSET_FIELDS = ['os_version', 'cpu_count', 'installed_software', 'ip_address', 'owner', 'location'] as const;
export const USER_FIELDS = ['department', 'login_count', 'groups', 'title', 'manager'] as const;

/** The n-th planted secret (rotating), so every one of them appears across a dataset. */
export function secret(n: number): string {
  const list = PLANTED_SECRETS;
  return list[((n % list.length) + list.length) % list.length] as string;
}

/** n-th name of a pool, made unique past the pool's end by a numeric suffix. */
export function poolName(pool: readonly string[], n: number, join: (name: string, k: number) => string): string {
  const base = pool[n % pool.length] as string;
  const round = Math.floor(n / pool.length);
  return round === 0 ? base : join(base, round + 1);
}
