import { clearSession, currentSession } from "./session.js";

/** The one error body of decisions 3.1, as the pages show it: in words. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: { path: string; message: string }[] = [],
  ) {
    super(message);
  }

  /** The message, with each field that was wrong when the API named them. */
  describe(): string {
    if (this.details.length === 0) return this.message;
    return `${this.message}: ${this.details.map((d) => `${d.path} ${d.message}`).join("; ")}`;
  }
}

/** Called when the session is refused, so the app can send the person back to the login page. */
let onSessionLost: () => void = () => {};
export function whenSessionLost(handler: () => void): void {
  onSessionLost = handler;
}

export async function errorOf(response: Response): Promise<ApiError> {
  try {
    const body = (await response.json()) as { error?: { code: string; message: string; details?: [] } };
    if (body.error)
      return new ApiError(response.status, body.error.code, body.error.message, body.error.details);
  } catch {
    // not the API's error body: fall through to the status line
  }
  return new ApiError(
    response.status,
    "HTTP_ERROR",
    `the server answered ${response.status} ${response.statusText}`,
  );
}

export interface RequestOptions {
  method?: string;
  json?: unknown;
  body?: BodyInit;
  /** Without the session (sign-up, verify, login). */
  anonymous?: boolean;
}

/** Calls the API on this origin with the session; answers the parsed JSON or throws an ApiError. */
export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const headers = new Headers();
  const session = options.anonymous ? null : currentSession();
  if (session) headers.set("authorization", `Bearer ${session.token}`);
  let body = options.body;
  if (options.json !== undefined) {
    headers.set("content-type", "application/json");
    body = JSON.stringify(options.json);
  }
  let response: Response;
  try {
    response = await fetch(path, { method: options.method ?? "GET", headers, ...(body ? { body } : {}) });
  } catch {
    throw new ApiError(0, "NETWORK", "the server could not be reached; check your connection and try again");
  }
  if (!response.ok) {
    const error = await errorOf(response);
    if (error.status === 401 && session) {
      clearSession();
      onSessionLost();
    }
    throw error;
  }
  return (await response.json()) as T;
}

/** The message to show for anything a page's action threw. */
export function messageOf(error: unknown): string {
  if (error instanceof ApiError) return error.describe();
  if (error instanceof Error) return error.message;
  return String(error);
}
