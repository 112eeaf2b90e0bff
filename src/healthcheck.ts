/**
 * Container health check without extra tools: GET /healthz on the port the daemon listens on
 * (EXPORTER_LISTEN_ADDRESS, default :9873). Exit 0 when it answers 200, 1 otherwise.
 */
const address = process.env.EXPORTER_LISTEN_ADDRESS ?? ':9873';
const port = Number(address.slice(address.lastIndexOf(':') + 1)) || 9873;

fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(4000) }).then(
  (res) => process.exit(res.ok ? 0 : 1),
  () => process.exit(1),
);
