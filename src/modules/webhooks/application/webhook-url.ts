import { invalidRequest } from '../../../common/errors/domain-error';
import { OutboundHttpClient } from '../../../common/outbound/outbound-http';

/** An endpoint URL must be absolute http(s) and start with an entry of OUTBOUND_URL_ALLOWLIST (else 400). */
export function checkWebhookUrl(http: OutboundHttpClient, url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw invalidRequest('url is not a URL', [{ field: 'url', message: 'must be an absolute http(s) URL' }]);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw invalidRequest('url must be http or https', [{ field: 'url', message: 'must be an absolute http(s) URL' }]);
  if (!http.policy.allows(url)) {
    throw invalidRequest('url is not in OUTBOUND_URL_ALLOWLIST', [{ field: 'url', message: 'must start with an entry of OUTBOUND_URL_ALLOWLIST' }]);
  }
}
