/** The codes a decision can fail with; the HTTP edge maps each to a status. */
export type DomainErrorCode =
  | "ACCOUNT_EXISTS"
  | "AGENT_DISCONNECTED"
  | "AGENT_ID_TAKEN"
  | "ALREADY_CONNECTED"
  | "CONFLICT"
  | "EMAIL_NOT_VERIFIED"
  | "FILES_MISSING"
  | "FILE_TOO_LARGE"
  | "FORBIDDEN"
  | "GONE"
  | "INVALID"
  | "INVALID_TOKEN"
  | "INVITE_PENDING"
  | "INVITE_RATE_LIMIT"
  | "KEY_LIMIT_REACHED"
  | "NOT_FOUND"
  | "QUOTA_EXCEEDED"
  | "REQUEST_CLOSED"
  | "RECEIPT_INVALID"
  | "SELF_CONNECTION"
  | "STORAGE_FULL"
  | "TRANSFER_PENDING"
  | "UNAUTHORIZED";

export class DomainError extends Error {
  /** `field`: the input the refusal is about, when it is one. */
  constructor(
    readonly code: DomainErrorCode,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = "DomainError";
  }
}

/** A decision: the events to record, or why the command is refused. */
export type Decision<Event> = Event[] | DomainError;

/**
 * A pure aggregate. Time, new ids and plan limits arrive in the command or its context;
 * nothing here reads a clock, a random source or a database.
 */
export interface Decider<Command, Event, State, Context = undefined> {
  initialState(): State;
  evolve(state: State, event: Event): State;
  decide(command: Command, state: State, context: Context): Decision<Event>;
}

export function fold<Event, State>(
  decider: Pick<Decider<never, Event, State, never>, "initialState" | "evolve">,
  events: Event[],
): State {
  return events.reduce((state, event) => decider.evolve(state, event), decider.initialState());
}

export function refuse(code: DomainErrorCode, message: string, field?: string): DomainError {
  return new DomainError(code, message, field);
}

/** Compile-time proof that a switch covered every member of a union. */
export function unreachable(value: never): never {
  throw new Error(`unhandled case: ${JSON.stringify(value)}`);
}
