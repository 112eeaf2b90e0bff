/** Dashboard uids: stable, so links and bookmarks keep working across regenerations. */
export const OVERVIEW_UID = 'cmdb-overview';
export const CONNECTOR_DETAIL_UID = 'cmdb-connector-detail';
export const EXPORTER_HEALTH_UID = 'cmdb-exporter-health';
