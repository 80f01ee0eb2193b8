import { SHIELD_LEVELS, type ShieldLevel } from "@handoff/sdk";
import { z } from "zod";
import { Connection } from "../../contract/connections.js";
import { SendableAgent } from "../../contract/directory.js";
import { Profile as ApiProfile } from "../../contract/profile.js";
import { IssuedRequestLink } from "../../contract/requests.js";
import { Transfer as ApiTransfer } from "../../contract/transfers.js";

/**
 * What the MCP tools answer (their `outputSchema`, and the type their work must return): the API's
 * answers from the contract where a tool passes one on (a transfer, the profile), and the receive
 * result of decisions 5.6.
 */
/**
 * An API answer as a tool's answer: a tool's schema must be an object at its root, which a named
 * contract schema is not (it converts to a reference); its fields keep their names inside.
 */
const asToolAnswer = <Shape extends z.ZodRawShape>(schema: z.ZodObject<Shape>) => z.object(schema.shape);

export const Transfer = asToolAnswer(ApiTransfer);
export const Profile = asToolAnswer(ApiProfile);
export const RequestLink = asToolAnswer(IssuedRequestLink);

export const InboxListing = z.object({
  transfers: z.array(ApiTransfer).describe("Every transfer in the inbox, all pages"),
});

export const Reachable = z.object({
  connections: z.array(Connection).describe("The account's connections, in every state"),
  sendable: z.array(SendableAgent).describe("The agents this agent can send to: its account's first"),
});

const ShieldFinding = z.object({
  kind: z.string().describe("What Shield found, e.g. disguised_executable, prompt_injection, hidden_text"),
  severity: z.enum(["critical", "high", "medium", "low"]),
  detail: z.string().describe("One sentence"),
});

export const ReceivedTransfer = z.object({
  transfer_id: z.string(),
  files: z.array(
    z.object({
      name: z.string().describe("The file's name as sent (a relative path for a folder's files)"),
      path: z.string().optional().describe("The absolute path written; absent when Shield blocked the file"),
      size: z.number().int().min(0).describe("Plaintext bytes received"),
      shield: z.object({
        level: z.enum(SHIELD_LEVELS as [ShieldLevel, ...ShieldLevel[]]),
        verdict: z
          .enum(["clean", "flagged", "blocked", "unscanned"])
          .describe("blocked: not written; flagged: written, with findings below the level's threshold"),
        findings: z.array(ShieldFinding),
      }),
    }),
  ),
});
