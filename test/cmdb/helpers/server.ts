/** Tiny loopback HTTP servers for the cases the simulator does not cover. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface LocalServer {
  server: Server;
  url: string;
  port: number;
  seen: SeenRequest[];
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

export async function startLocal(handler: Handler): Promise<LocalServer> {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A token endpoint that issues `tok-<n>` and a license endpoint that accepts only the newest token. */
export function tokenAndLicense(): Handler {
  let issued = 0;
  return (req, res) => {
    if (req.url === '/CMDB/v1/access_token') {
      issued++;
      sendJson(res, 200, { code: 200, message: 'success', data: { token: `tok-${issued}-abcdef` } });
      return;
    }
    if (req.headers.authorization !== `Bearer tok-${issued}-abcdef`) {
      sendJson(res, 401, { message: 'unauthorized' });
      return;
    }
    sendJson(res, 200, { licenseType: 'FULL', expireDate: '2030-01-01', customerName: 'ACME' });
  };
}
