/**
 * Container health check without extra tools: GET /healthz on the port the daemon listens on
 * (EXPORTER_LISTEN_ADDRESS, default :9873). Exit 0 when it answers 200, 1 otherwise.
 *
 * With --web.config.file the port may speak TLS and ask for a password the health check does not
 * have: then a TLS handshake that completes (the certificate is not checked: this only asks whether
 * the process on this host answers) and a 401 from the authentication in front of every path
 * prove just as well that the process runs.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

const address = process.env.EXPORTER_LISTEN_ADDRESS ?? ':9873';
const port = Number(address.slice(address.lastIndexOf(':') + 1)) || 9873;

function probe(tls: boolean): Promise<number> {
  return new Promise((resolve) => {
    const options = { host: '127.0.0.1', port, path: '/healthz', timeout: 4000, ...(tls ? { rejectUnauthorized: false } : {}) };
    const req = (tls ? httpsRequest : httpRequest)(options, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

const plain = await probe(false);
const status = plain === 0 ? await probe(true) : plain;
process.exit(status === 200 || status === 401 ? 0 : 1);
