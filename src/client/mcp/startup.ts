import type { LoggingLevel } from "@modelcontextprotocol/sdk/types.js";

/** The parts of the startup profile (GET /v1/agents/me) the MCP server announces. */
export interface StartupProfile {
  inbox: { unread_transfers: number };
  broadcasts: { unread_count: number; urgent: { title: string; severity: string }[] };
}

export interface Announcement {
  level: LoggingLevel;
  text: string;
}

/**
 * Decisions 5.5: on start, one line per urgent broadcast (its title) and the unread count; the
 * same lines go to stderr and, as MCP logging messages, to the client.
 */
export function startupAnnouncements(profile: StartupProfile): Announcement[] {
  const urgent = profile.broadcasts.urgent.map(
    ({ title, severity }): Announcement => ({
      level: severity === "critical" ? "critical" : "warning",
      text: `urgent broadcast (${severity}): ${title}`,
    }),
  );
  const unread: Announcement = {
    level: "info",
    text: `unread: ${profile.inbox.unread_transfers} transfers, ${profile.broadcasts.unread_count} broadcasts`,
  };
  return [...urgent, unread];
}
