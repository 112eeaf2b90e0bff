/**
 * The thresholds the status page's "what needs attention" uses: the same numbers as the shipped
 * alerts (THRESHOLDS in scripts/gen-rules.ts; a test asserts they are equal), kept here so that the
 * exporter can read them without importing the generators.
 */
export const ATTENTION_THRESHOLDS = {
  licenseWarningDays: 30,
  licenseCriticalDays: 7,
  connectorMaxRunAgeSeconds: 2 * 86400,
  mergerMaxRunAgeSeconds: 26 * 3600,
  ingestionMaxRunSeconds: 6 * 3600,
  ingestionMaxSuccessAgeSeconds: 26 * 3600,
  /** Action job statuses that count as success (a regular expression, as in the alert). */
  actionJobOkStatuses: '(?i)success',
} as const;

export type AttentionThresholds = { readonly [K in keyof typeof ATTENTION_THRESHOLDS]: (typeof ATTENTION_THRESHOLDS)[K] extends string ? string : number };
