/** The typed REST client: paths and bodies come from the generated OpenAPI schema. */
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema';
import { useAuth } from '../auth';

export type Schemas = components['schemas'];

/** The API's one error body, `{code, message, detail}`, raised as an exception. */
export class ApiProblem extends Error {
  readonly status: number;
  readonly code: string;
  readonly detail: unknown;
  constructor(status: number, code: string, message: string, detail: unknown) {
    super(message);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

const bearer: Middleware = {
  onRequest({ request }) {
    const token = useAuth.getState().token;
    if (token) request.headers.set('Authorization', `Bearer ${token}`);
    return request;
  },
  onResponse({ response }) {
    // An expired or revoked token sends the user back to the login form.
    if (response.status === 401 && !response.url.endsWith('/api/auth/login')) useAuth.getState().logout();
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: '' });
api.use(bearer);

/** The error body (ErrorBody of the schema) as an ApiProblem; a body of another shape is kept as detail. */
export function toProblem(status: number, body: unknown): ApiProblem {
  if (body && typeof body === 'object' && 'message' in body) {
    const b = body as Schemas['ErrorBody'];
    return new ApiProblem(status, b.code ?? 'error', b.message, b.detail);
  }
  return new ApiProblem(status, 'error', `HTTP ${status}`, body);
}

/** Unwrap an openapi-fetch result: the data, or an ApiProblem thrown. */
export async function unwrap<T>(
  pending: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data, error, response } = await pending;
  if (!response.ok) throw toProblem(response.status, error);
  return data as T;
}

export function problemText(error: unknown): string {
  if (error instanceof ApiProblem) {
    const detail = error.detail;
    if (Array.isArray(detail) && detail.length) {
      const first = detail[0] as { loc?: unknown[]; msg?: string; path?: string; message?: string };
      const where = first.path ?? (first.loc ? first.loc.join('.') : '');
      return `${error.message}${where ? ` (${where}: ${first.msg ?? first.message ?? ''})` : ''}`;
    }
    return error.message;
  }
  return error instanceof Error ? error.message : String(error);
}
