/**
 * Decisions 7.2's numbers for resumable uploads, in a module without Node imports so that the
 * browser app (web/) uploads by the same rule as the SDK and the CLI.
 */

/** Files from this many bytes on the wire go through `resumable_url` (decisions 7.2). */
export const RESUMABLE_FROM = 8 * 1024 * 1024;

/** Attempts in a row that move the server's offset nowhere before an upload gives up (7.2). */
export const MAX_STALLED_ATTEMPTS = 5;
