import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { nextRetryAt } from './webhook-events';
import { newWebhookSecret, signWebhook, WebhookSecretBox } from './webhook-signature';

describe('webhook signatures', () => {
  it('signs so that the standardwebhooks package verifies it, and not with another secret', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const body = JSON.stringify({ id: 'whevt_1', type: 'run.completed', data: { object: { x: 'é' } } });
    const ts = Math.floor(Date.now() / 1000);
    const headers = signWebhook(secret, 'whevt_1', ts, body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(secret).verify(body + ' ', headers)).toThrow();
  });

  it('seals secrets with AES-256-GCM: opens with the key, refuses another key or a changed ciphertext', () => {
    const box = new WebhookSecretBox(randomBytes(32));
    const secret = newWebhookSecret();
    const sealed = box.seal(secret);
    expect(sealed).not.toContain(secret.slice(6, 20));
    expect(box.open(sealed)).toBe(secret);
    expect(() => new WebhookSecretBox(randomBytes(32)).open(sealed)).toThrow();
    const parts = sealed.split('.');
    parts[3] = Buffer.from('x' + Buffer.from(parts[3], 'base64url').toString('latin1').slice(1), 'latin1').toString('base64url');
    expect(() => box.open(parts.join('.'))).toThrow();
  });

  it('backs off exponentially from the base, at most an hour apart, and gives up after the window', () => {
    const t0 = new Date(0);
    const mid = () => 0.5;
    expect(nextRetryAt(1, t0, t0, 1000, 86_400_000, mid)!.getTime()).toBe(1000);
    expect(nextRetryAt(2, t0, t0, 1000, 86_400_000, mid)!.getTime()).toBe(2000);
    expect(nextRetryAt(5, t0, t0, 1000, 86_400_000, mid)!.getTime()).toBe(16000);
    expect(nextRetryAt(30, t0, t0, 1000, 86_400_000, mid)!.getTime()).toBe(3_600_000);
    const low = nextRetryAt(1, t0, t0, 1000, 86_400_000, () => 0)!.getTime();
    const high = nextRetryAt(1, t0, t0, 1000, 86_400_000, () => 0.999)!.getTime();
    expect(low).toBe(800);
    expect(high).toBeGreaterThan(1190);
    expect(nextRetryAt(30, t0, new Date(86_000_000), 1000, 86_400_000, mid)).toBeNull();
  });
});
