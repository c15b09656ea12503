import type { MessageAttributeValue, SNSClientConfig } from '@aws-sdk/client-sns';
import type { SmsProvider } from './provider.js';
import { DeliveryError } from '../errors.js';
import { DEFAULT_TIMEOUT_MS, retryableStatus } from './http.js';
import type { SnsConfig } from '../../settings.js';

export type { SnsConfig } from '../../settings.js';

/** Error names of a throttled request; the SDK gives the query protocol's codes as names. */
const THROTTLING = new Set(['ThrottledException', 'KMSThrottlingException', 'Throttling', 'ThrottlingException']);

export function createSnsProvider(config: SnsConfig): SmsProvider {
  const timeoutMs = config.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // The AWS SDK (about 270 ms to load) is loaded by a server whose SMS provider is SNS, when
  // the provider is made, and not by every process that imports the relay.
  const loading = import('@aws-sdk/client-sns').then((sdk) => ({
    sdk,
    client: new sdk.SNSClient({
      region: config.region,
      endpoint: config.endpoint,
      credentials: config.credentials,
      // One attempt per delivery: the relay queue retries with its own backoff, and a send that
      // the SDK retried inside our deadline could go out twice without us knowing.
      maxAttempts: 1,
      requestHandler: { connectionTimeout: timeoutMs, requestTimeout: timeoutMs, throwOnRequestTimeout: true },
    }),
  }));
  // Seen by the first send (or close) that awaits it; not an unhandled rejection meanwhile.
  loading.catch(() => undefined);
  const attributes: Record<string, MessageAttributeValue> = {
    'AWS.SNS.SMS.SMSType': { DataType: 'String', StringValue: config.smsType },
  };
  if (config.senderId) attributes['AWS.SNS.SMS.SenderID'] = { DataType: 'String', StringValue: config.senderId };
  if (config.originationNumber) {
    attributes['AWS.MM.SMS.OriginationNumber'] = { DataType: 'String', StringValue: config.originationNumber };
  }

  return {
    name: 'sns',
    async send({ to, text }) {
      const { sdk, client } = await loading;
      const signal = AbortSignal.timeout(timeoutMs);
      try {
        const result = await client.send(new sdk.PublishCommand({ PhoneNumber: to, Message: text, MessageAttributes: attributes }), {
          abortSignal: signal,
        });
        return { providerId: result.MessageId ?? null };
      } catch (err) {
        throw deliveryError(sdk.SNSServiceException, err, signal.aborted, timeoutMs);
      }
    },
    async close() {
      (await loading.catch(() => undefined))?.client.destroy();
    },
  };
}

/**
 * An answer from SNS by its status (429 and 5xx may pass, like the throttling codes SNS
 * sends with a 400; any other refusal repeats: InvalidParameter for a bad number,
 * AuthorizationError, OptedOut…). No answer at all (network, timeout) may pass too. Neither
 * the SDK's messages nor its errors carry the secret key, which never leaves the signer.
 */
function deliveryError(
  SNSServiceException: typeof import('@aws-sdk/client-sns').SNSServiceException,
  err: unknown,
  aborted: boolean,
  timeoutMs: number,
): DeliveryError {
  if (err instanceof SNSServiceException) {
    const status = err.$metadata.httpStatusCode ?? 0;
    const retryable = retryableStatus(status) || THROTTLING.has(err.name) || err.$fault === 'server';
    return new DeliveryError(`Amazon SNS answered HTTP ${status}, ${err.name}: ${err.message}`, retryable, { cause: err });
  }
  const { name, message } = err instanceof Error ? err : { name: 'Error', message: String(err) };
  if (aborted || name === 'TimeoutError') {
    return new DeliveryError(`Amazon SNS did not answer within ${timeoutMs} ms`, true, { cause: err });
  }
  // No usable credentials in the chain: a configuration problem, not one that passes.
  if (name === 'CredentialsProviderError') {
    return new DeliveryError(`Amazon SNS: no AWS credentials could be loaded: ${message}`, false, { cause: err });
  }
  return new DeliveryError(`Amazon SNS request failed: ${message}`, true, { cause: err });
}
