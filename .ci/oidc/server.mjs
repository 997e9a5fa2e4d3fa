// A real OAuth 2.0 authorization server (oidc-provider, OpenID Certified)
// for the edge's access-token tests. The Go tests start it on loopback:
//
//   PORT=0 JWKS_FILE=keys.json AUDIENCE=https://api.example.com/v1 node server.mjs
//
// It prints "listening <issuer>" once it serves. PORT=0 picks a free port;
// a restart with the same PORT and another JWKS_FILE rotates the signing
// keys (the first key of the file signs; the others stay published).
//
// Clients (client_secret_basic, client credentials grant only):
//   partner-a        may ask for properties:read
//   partner-b        may ask for properties:read (a second record)
//   partner-noscope  may ask for other:read only
//   partner-unknown  may ask for properties:read; has no key-file record
// Access tokens are RFC 9068 JWTs for any https resource indicator (RFC
// 8707); with none, for AUDIENCE.
import http from 'node:http';
import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';

const { PORT = '0', JWKS_FILE, AUDIENCE, ACCESS_TOKEN_TTL = '300' } = process.env;
if (!JWKS_FILE || !AUDIENCE) {
  console.error('JWKS_FILE and AUDIENCE are required');
  process.exit(2);
}
const jwks = JSON.parse(readFileSync(JWKS_FILE, 'utf8'));
const signingAlg = jwks.keys[0].alg || 'RS256';

const client = (id, scope) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
  token_endpoint_auth_method: 'client_secret_basic',
  scope,
});

const configuration = {
  clients: [
    client('partner-a', 'properties:read'),
    client('partner-b', 'properties:read'),
    client('partner-noscope', 'other:read'),
    client('partner-unknown', 'properties:read'),
  ],
  jwks,
  scopes: ['openid', 'properties:read', 'other:read'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (ctx, client, oneOf) => oneOf ?? AUDIENCE,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (ctx, resourceIndicator) => {
        if (!resourceIndicator.startsWith('https://')) {
          throw new Error('resource indicators are https URLs here');
        }
        return {
          scope: 'properties:read other:read',
          audience: resourceIndicator,
          accessTokenTTL: Number(ACCESS_TOKEN_TTL),
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: signingAlg } },
        };
      },
    },
  },
};

const server = http.createServer();
server.listen(Number(PORT), '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, configuration);
  server.on('request', provider.callback());
  console.log(`listening ${issuer}`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
