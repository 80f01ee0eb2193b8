import { mkdir, readdir, readFile, rename, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import nodemailer from "nodemailer";
import { readableMessage } from "./eml.js";

/** Decisions section 4: every e-mail says what it is in this header. */
export type EmailType = "verify" | "invite" | "nudge" | "files-ready" | "password-reset";

export interface Email {
  to: string;
  subject: string;
  text: string;
  type: EmailType;
}

export interface Mailer {
  send(email: Email): Promise<void>;
  /** Erasure (decisions 6.5): drops every message still held here that is addressed to `address`. */
  forget(address: string): Promise<number>;
  close(): void;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

function message(from: string, email: Email) {
  return {
    from,
    to: email.to,
    subject: email.subject,
    text: email.text,
    headers: { "X-Service-Email-Type": email.type },
  };
}

/**
 * The embedded default: each e-mail is a complete RFC 5322 message (built by nodemailer) written
 * to DATA_DIR/outbox as an .eml file, whole or not at all, its text readable as it is (eml.ts).
 */
export class OutboxMailer implements Mailer {
  private readonly builder = nodemailer.createTransport({
    streamTransport: true,
    buffer: true,
    newline: "unix",
  });

  constructor(
    private readonly directory: string,
    private readonly from: string,
  ) {}

  async send(email: Email): Promise<void> {
    const built = await this.builder.sendMail(message(this.from, email));
    const readable = readableMessage(built.message as Buffer);
    await mkdir(this.directory, { recursive: true });
    const name = `${new Date().toISOString().replaceAll(":", "-")}-${built.messageId.replace(/[^\w.@-]/g, "")}.eml`;
    const temp = join(this.directory, `.${name}.tmp`);
    await writeFile(temp, readable);
    await rename(temp, join(this.directory, name));
  }

  /**
   * The outbox stands in for a mail server: messages to an erased person are deleted whole (file
   * names hold a time and a message id, never an address, so a name alone gives nothing away).
   */
  async forget(address: string): Promise<number> {
    const names = await readdir(this.directory).catch(() => [] as string[]);
    const recipient = new RegExp(`^To: .*${escapeRegExp(address.trim())}`, "im");
    let deleted = 0;
    for (const name of names.filter((n) => n.endsWith(".eml"))) {
      const path = join(this.directory, name);
      if (recipient.test(await readFile(path, "utf8"))) {
        await unlink(path);
        deleted++;
      }
    }
    return deleted;
  }

  close(): void {
    this.builder.close();
  }
}

/** SMTP_URL set: e-mail goes out through that server. */
export class SmtpMailer implements Mailer {
  private readonly transport;

  constructor(
    url: string,
    private readonly from: string,
  ) {
    this.transport = nodemailer.createTransport(url);
  }

  async send(email: Email): Promise<void> {
    await this.transport.sendMail(message(this.from, email));
  }

  /** Sent mail has left for the recipient's server: there is nothing here to forget. */
  async forget(): Promise<number> {
    return 0;
  }

  close(): void {
    this.transport.close();
  }
}
