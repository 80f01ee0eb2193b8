/** The logged-in person, as POST /v1/auth/login answered (decisions 4.3). */
export interface Account {
  id: string;
  email: string;
  name: string | null;
  plan: string;
  kind: "human" | "agent";
  email_verified: boolean;
  created_at: string;
}

export interface Session {
  token: string;
  expires_at: string;
  account: Account;
}

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
