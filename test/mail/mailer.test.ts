import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Email, OutboxMailer, SmtpMailer } from "../../src/mail/mailer.js";
import { tempDir } from "../support/databases.js";

const invite: Email = {
  to: "carol@example.com",
  subject: "alice sent you a file on Handoff",
  text: "Grüße: your files are waiting.",
  type: "invite",
};

describe("outbox mailer (embedded default)", () => {
  it("writes each e-mail as a whole .eml file with its type header", async () => {
    const dir = tempDir();
    const mailer = new OutboxMailer(dir.path, "Handoff <no-reply@example.com>");
    try {
      await mailer.send(invite);
      const files = readdirSync(dir.path);
      expect(files).toHaveLength(1);
      const eml = readFileSync(join(dir.path, files[0] as string), "utf8");
      expect(eml).toMatch(/^To: carol@example.com$/m);
      expect(eml).toMatch(/^From: Handoff <no-reply@example.com>$/m);
      expect(eml).toMatch(/^X-Service-Email-Type: invite$/m);
      expect(eml).toMatch(/^Message-ID: </m);
    } finally {
      mailer.close();
      dir.remove();
    }
  });
});

describe("SMTP mailer (SMTP_URL)", () => {
  const received: string[] = [];
  let server: SMTPServer;
  let port = 0;
  beforeAll(async () => {
    server = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS"],
      onData(stream, _session, done) {
        const chunks: Buffer[] = [];
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("end", () => {
          received.push(Buffer.concat(chunks).toString("utf8"));
          done();
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.server.address() as { port: number }).port;
  });
  afterAll(async () => new Promise<void>((resolve) => server.close(() => resolve())));

  it("delivers the message with its type header to the SMTP server", async () => {
    const mailer = new SmtpMailer(`smtp://127.0.0.1:${port}`, "no-reply@example.com");
    try {
      await mailer.send(invite);
    } finally {
      mailer.close();
    }
    expect(received).toHaveLength(1);
    expect(received[0]).toMatch(/^X-Service-Email-Type: invite\r?$/m);
    expect(received[0]).toMatch(/^To: carol@example.com\r?$/m);
  });
});
