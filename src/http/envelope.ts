import type { Response } from 'express';
import type { LocatedFieldError } from './errors.js';

export interface Meta {
  success: boolean;
  code: number;
  message?: string;
  errors?: LocatedFieldError[];
}

/** Sends `{meta, data}` with status 200 (or `code`). */
export function sendData<T>(res: Response, data: T, message?: string, code = 200): void {
  const meta: Meta = { success: true, code };
  if (message !== undefined) meta.message = message;
  res.status(code).json({ meta, data });
}

/**
 * The error envelope: `meta` as the specification has it, and the machine-readable `code` and
 * the `message` at the top level too, where the ReportedIP clients read (and show) them. The
 * top-level message is meta.message, or `topLevelMessage` where that says more (the 401's hint).
 */
export function errorBody(status: number, message: string, code: string, errors?: LocatedFieldError[], data?: unknown, topLevelMessage?: string) {
  const meta: Meta = { success: false, code: status, message };
  if (errors?.length) meta.errors = errors;
  return { meta, data: data ?? null, code, message: topLevelMessage ?? message };
}
