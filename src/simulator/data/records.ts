/**
 * The asset and user records behind the data query endpoint (POST /CMDB/v2/data/cmdb) and their
 * field metadata (GET /CMDB/v2/data/metadata/{asset,user}). The records are what the internal
 * mergers built: a table is rebuilt when its merger (`Lucidum Asset Merger`, `Lucidum User
 * Merger`; any merger when the dataset has none of that name) writes a run that did not fail, and
 * its records are a function of the seed and the rebuild time alone, so every rebuild changes the
 * counts a little and between rebuilds nothing moves.
 */
import { Rng } from '../random.js';
import { seedTime } from '../day-offset.js';
import { DAY_MS, zonelessDateTime as time } from '../format.js';
import type { ConnectorRow } from './types.js';

export type TableName = 'asset' | 'user';
export type FieldValue = string | number | boolean | string[] | null;
export type DataRecord = Readonly<Record<string, FieldValue>>;

export interface FieldSpec {
  readonly fieldName: string;
  readonly dataType: 'Binary' | 'Datetime' | 'Float' | 'Integer' | 'List' | 'String';
  readonly fieldDescription: string;
  readonly fieldGroup: string;
}

const f = (fieldName: string, dataType: FieldSpec['dataType'], fieldGroup: string, fieldDescription: string): FieldSpec => ({
  fieldName,
  dataType,
  fieldDescription,
  fieldGroup,
});

export const FIELDS: Readonly<Record<TableName, readonly FieldSpec[]>> = {
  asset: [
    f('Asset_Name', 'String', 'Identity', 'Name of the asset'),
    f('Host_Name', 'String', 'Identity', 'Host name'),
    f('Asset_Type', 'String', 'Identity', 'Type of the asset as the sources report it'),
    f('Lucidum_Asset_Type', 'String', 'Identity', 'Normalised asset type'),
    f('OS', 'String', 'System', 'Operating system'),
    f('Lucidum_OS_Type', 'String', 'System', 'Normalised operating system family'),
    f('sourcetype', 'List', 'Sources', 'Data sources that reported the asset'),
    f('IP_Address', 'List', 'Network', 'IP addresses'),
    f('EXT_Open_Ports', 'List', 'Network', 'Ports open to the internet'),
    f('Is_Public', 'Binary', 'Network', 'Reachable from the internet'),
    f('Is_Cloud_Device', 'Binary', 'System', 'Runs in a public cloud'),
    f('Is_Encrypted', 'Binary', 'Security', 'Disk encryption on'),
    f('EP_Not_Installed', 'Binary', 'Security', 'No endpoint protection (EDR) agent reports the asset'),
    f('EP_Not_Updated', 'Binary', 'Security', 'The endpoint protection agent is outdated'),
    f('First_Discovered_Datetime', 'Datetime', 'Lifecycle', 'First seen by any source'),
    f('Last_Discovered_Datetime', 'Datetime', 'Lifecycle', 'Last seen by any source'),
    f('Risk_Score', 'Float', 'Security', 'Risk score, 0 to 100'),
    f('High_CVE', 'Integer', 'Security', 'High-severity vulnerabilities'),
    f('Data_Classification', 'String', 'Security', 'Classification of the data it holds'),
    f('Owner_Name', 'String', 'Ownership', 'Owner'),
    f('Owner_Email', 'String', 'Ownership', 'Owner e-mail'),
    f('Asset_Tags_SmartLabel', 'List', 'Custom', 'SmartLabels of this deployment'),
  ],
  user: [
    f('User_Name', 'String', 'Identity', 'Account name'),
    f('Email', 'String', 'Identity', 'E-mail address'),
    f('Department', 'String', 'Organisation', 'Department'),
    f('sourcetype', 'List', 'Sources', 'Data sources that reported the user'),
    f('Is_Admin', 'Binary', 'Security', 'Holds an administrative role'),
    f('MFA_Enabled', 'Binary', 'Security', 'Multi-factor authentication enrolled'),
    f('Is_Active', 'Binary', 'Lifecycle', 'Account enabled'),
    f('Risk_Score', 'Float', 'Security', 'Risk score, 0 to 100'),
    f('Failed_Logins', 'Integer', 'Security', 'Failed sign-ins in the last 30 days'),
    f('First_Discovered_Datetime', 'Datetime', 'Lifecycle', 'First seen by any source'),
    f('Last_Discovered_Datetime', 'Datetime', 'Lifecycle', 'Last seen by any source'),
    f('Last_Login_Datetime', 'Datetime', 'Lifecycle', 'Last sign-in'),
  ],
};

/** The metadata endpoint's body: every queryable field of the table. */
export function metadataOf(table: TableName) {
  return { metadata: FIELDS[table].map((s) => ({ fieldName: s.fieldName, fieldDescription: s.fieldDescription, dataType: s.dataType, displayName: s.fieldName.replace(/_/g, ' '), fieldGroup: s.fieldGroup })) };
}

const ASSET_TYPES: ReadonlyArray<readonly [string, number]> = [['Server', 30], ['Workstation', 35], ['Laptop', 15], ['Virtual Machine', 10], ['Network Device', 5], ['Cloud Instance', 5]];
const OS_BY_TYPE: Readonly<Record<string, readonly string[]>> = {
  Server: ['Windows Server 2019', 'Windows Server 2022', 'Ubuntu 22.04', 'Red Hat Enterprise Linux 8'],
  Workstation: ['Windows 10', 'Windows 11'],
  Laptop: ['Windows 11', 'macOS 14'],
  'Virtual Machine': ['Ubuntu 22.04', 'Windows Server 2022', 'Debian 12'],
  'Network Device': ['Cisco IOS XE', 'FortiOS 7'],
  'Cloud Instance': ['Amazon Linux 2023', 'Ubuntu 22.04'],
};
const ASSET_SOURCES = ['servicenow_cmdb', 'active_directory', 'microsoft_intune', 'qualys_vm', 'tenable_io', 'vmware_vcenter', 'aws_ec2', 'jamf_pro'];
const USER_SOURCES = ['okta_directory', 'azure_entra_id', 'active_directory', 'hr_export_csv'];
const DEPARTMENTS = ['Finance', 'Engineering', 'Sales', 'Human Resources', 'IT Operations', 'Legal'];
const CLASSES = ['Public', 'Internal', 'Confidential', 'Restricted'];
const PORTS = ['22', '80', '443', '3389', '8080', '445'];

/** Days since last seen: most within a week, some up to a month, a tail of stale records. */
function daysUnseen(rng: Rng): number {
  const r = rng.next();
  if (r < 0.72) return rng.next() * 7;
  if (r < 0.85) return 7 + rng.next() * 23;
  return 30 + rng.next() * 150;
}

function family(os: string): string {
  if (os.startsWith('Windows')) return 'Windows';
  if (os.startsWith('macOS')) return 'macOS';
  return /IOS|FortiOS/.test(os) ? 'Network' : 'Linux';
}

function asset(seed: number, i: number, rebuildMs: number): DataRecord {
  // What an asset is stays; what the sources report of it changes from rebuild to rebuild.
  const base = Rng.of(seed, 'asset-record', i);
  const now = Rng.of(seed, 'asset-record', i, seedTime(rebuildMs));
  const type = base.weighted(ASSET_TYPES);
  const os = base.pick(OS_BY_TYPE[type] ?? ['Linux']);
  const name = `${type === 'Server' ? 'srv' : type === 'Network Device' ? 'net' : 'host'}-${String(i).padStart(4, '0')}`;
  const isPublic = base.chance(type === 'Server' || type === 'Cloud Instance' ? 0.3 : 0.03);
  const edr = type !== 'Network Device' && now.chance(0.82);
  const sources = ASSET_SOURCES.filter(() => now.chance(0.35));
  if (edr) sources.unshift('crowdstrike_falcon');
  const ports = isPublic ? PORTS.filter(() => now.chance(0.3)) : [];
  const first = rebuildMs - (30 + base.int(0, 700)) * DAY_MS;
  const lastSeen = Math.max(first, rebuildMs - daysUnseen(now) * DAY_MS);
  return {
    Asset_Name: name,
    Host_Name: `${name}.corp.example.com`,
    Asset_Type: type,
    Lucidum_Asset_Type: type.toLowerCase(),
    OS: os,
    Lucidum_OS_Type: family(os),
    sourcetype: sources.length > 0 ? sources : ['servicenow_cmdb'],
    IP_Address: [`10.${base.int(0, 255)}.${base.int(0, 255)}.${base.int(1, 254)}`],
    EXT_Open_Ports: ports,
    Is_Public: isPublic,
    Is_Cloud_Device: type === 'Cloud Instance',
    Is_Encrypted: base.chance(0.7),
    EP_Not_Installed: !edr,
    EP_Not_Updated: edr && now.chance(0.1),
    First_Discovered_Datetime: time(first),
    Last_Discovered_Datetime: time(lastSeen),
    Risk_Score: Math.round((base.next() * 60 + now.next() * 40) * 10) / 10,
    High_CVE: now.int(0, type === 'Server' ? 12 : 4),
    Data_Classification: base.pick(CLASSES),
    Owner_Name: `Owner ${base.int(1, 40)}`,
    Owner_Email: `owner${base.int(1, 40)}@example.com`,
    Asset_Tags_SmartLabel: base.chance(0.2) ? ['crown-jewel'] : [],
  };
}

function user(seed: number, i: number, rebuildMs: number): DataRecord {
  const base = Rng.of(seed, 'user-record', i);
  const now = Rng.of(seed, 'user-record', i, seedTime(rebuildMs));
  const admin = base.chance(0.08);
  const first = rebuildMs - (30 + base.int(0, 1500)) * DAY_MS;
  const lastSeen = Math.max(first, rebuildMs - daysUnseen(now) * DAY_MS);
  return {
    User_Name: `user${String(i).padStart(4, '0')}`,
    Email: `user${String(i).padStart(4, '0')}@example.com`,
    Department: base.pick(DEPARTMENTS),
    sourcetype: USER_SOURCES.filter((_, k) => k === 0 || now.chance(0.5)),
    Is_Admin: admin,
    MFA_Enabled: now.chance(admin ? 0.9 : 0.75),
    Is_Active: now.chance(0.93),
    Risk_Score: Math.round(Math.min(100, base.next() * 55 + now.next() * 45 + (admin ? 10 : 0)) * 10) / 10,
    Failed_Logins: now.chance(0.8) ? 0 : now.int(1, 30),
    First_Discovered_Datetime: time(first),
    Last_Discovered_Datetime: time(lastSeen),
    Last_Login_Datetime: time(Math.max(first, lastSeen - now.int(0, 3) * DAY_MS)),
  };
}

/** The records of one table as of its last rebuild; built on first use after each rebuild. */
export class RecordTable {
  private built: { at: number; records: DataRecord[] } | undefined;

  constructor(
    readonly table: TableName,
    private readonly seed: number,
    private readonly size: number,
    /** When the table was last rebuilt (ms). */
    public rebuiltAtMs: number,
  ) {}

  records(): readonly DataRecord[] {
    if (this.built?.at !== this.rebuiltAtMs) {
      const make = this.table === 'asset' ? asset : user;
      this.built = { at: this.rebuiltAtMs, records: Array.from({ length: this.size }, (_, i) => make(this.seed, i, this.rebuiltAtMs)) };
    }
    return this.built.records;
  }

  rebuild(atMs: number): void {
    this.rebuiltAtMs = Math.max(this.rebuiltAtMs, atMs);
  }
}

export interface Records {
  readonly asset: RecordTable;
  readonly user: RecordTable;
}

/** The bridge names of the merger connectors among `specs`. */
export function mergerNames(specs: Iterable<{ readonly bridgeName: string; readonly profileKind: string }>): Set<string> {
  return new Set([...specs].filter((s) => s.profileKind === 'merger').map((s) => s.bridgeName));
}

/** The merger names and the table each rebuilds (exact names, as the platform writes them). */
const MERGERS: Readonly<Record<string, TableName>> = { 'Lucidum Asset Merger': 'asset', 'Lucidum User Merger': 'user' };
/** A merger run rebuilt its tables when it did not fail: Success or Warning in any case (the exporter's rule, src/api/connector-runs.ts). */
const REBUILT: ReadonlySet<string> = new Set(['SUCCESS', 'WARNING']);

/** The tables a merger row rebuilds: its own, or every table without a merger of its own in `mergers`. */
function tablesOf(row: ConnectorRow, mergers: ReadonlySet<string>): TableName[] {
  const own = MERGERS[row.bridge_name];
  const orphans = (['asset', 'user'] as const).filter((t) => ![...mergers].some((m) => MERGERS[m] === t));
  return [...new Set([...(own === undefined ? [] : [own]), ...orphans])];
}

/**
 * The merger rows among `rows` rebuild their tables at their time, unless they failed (Error,
 * Warning&Error, FAILED, empty): the exporter's rule for "data as of" (src/api/connector-runs.ts).
 */
export function noteMergerRuns(records: Records, rows: readonly ConnectorRow[], mergers: ReadonlySet<string>): void {
  for (const row of rows) {
    if (row.platform !== 'ML-ENGINE' || !REBUILT.has(row.status.trim().toUpperCase())) continue;
    for (const table of tablesOf(row, mergers)) records[table].rebuild(row._time * 1000);
  }
}

/** The record tables of a new dataset, as the newest successful merger runs of its history left them. */
export function initialRecords(seed: number, sizes: { asset: number; user: number }, startMs: number, rows: readonly ConnectorRow[], mergers: ReadonlySet<string>): Records {
  // Before any merger row: built a day before the start, as a stack's data would be.
  const records = { asset: new RecordTable('asset', seed, sizes.asset, startMs - DAY_MS), user: new RecordTable('user', seed, sizes.user, startMs - DAY_MS) };
  noteMergerRuns(records, rows, mergers);
  return records;
}
