/** Every CMDB request received, oldest first, bounded so a long demo cannot grow it without end. */
import type { RequestRecord } from './api.js';

export const REQUEST_LOG_LIMIT = 10_000;

export class RequestLog {
  private records: RequestRecord[] = [];

  add(record: RequestRecord): void {
    this.records.push(record);
    // Trim in batches: one splice per thousand requests instead of a shift per request.
    if (this.records.length > REQUEST_LOG_LIMIT + 1000) this.records.splice(0, this.records.length - REQUEST_LOG_LIMIT);
  }

  list(): RequestRecord[] {
    return this.records.slice(-REQUEST_LOG_LIMIT);
  }

  clear(): void {
    this.records = [];
  }
}
