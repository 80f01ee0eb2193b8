import type { Session } from "@handoff/sdk/types";

// Per tab, gone when the tab closes: a session token is worth as much as an API key.
const KEY = "handoff.session";
const listeners = new Set<() => void>();

export function currentSession(): Session | null {
  const stored = sessionStorage.getItem(KEY);
  if (!stored) return null;
  const session = JSON.parse(stored) as Session;
  if (Date.parse(session.expires_at) <= Date.now()) {
    sessionStorage.removeItem(KEY);
    return null;
  }
  return session;
}

export function saveSession(session: Session): void {
  sessionStorage.setItem(KEY, JSON.stringify(session));
  for (const listener of listeners) listener();
}

export function clearSession(): void {
  sessionStorage.removeItem(KEY);
  for (const listener of listeners) listener();
}

export function onSessionChange(listener: () => void): void {
  listeners.add(listener);
}
