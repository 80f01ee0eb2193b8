/**
 * A test's client of an event stream: real HTTP (fetch), the raw text kept as it arrived, so a
 * test can assert both the bytes (decisions 8.4) and the events they make.
 */
export class EventStreamReader {
  text = "";
  readonly done: Promise<void>;

  private constructor(
    readonly response: Response,
    private readonly controller: AbortController,
  ) {
    const body = response.body;
    this.done = (async () => {
      if (!body) return;
      const decoder = new TextDecoder();
      try {
        for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
          this.text += decoder.decode(chunk, { stream: true });
        }
      } catch {
        // Aborted by close(): the text so far stays.
      }
    })();
  }

  static async open(url: string, headers: Record<string, string>): Promise<EventStreamReader> {
    const controller = new AbortController();
    const response = await fetch(url, {
      headers: { accept: "text/event-stream", ...headers },
      signal: controller.signal,
    });
    return new EventStreamReader(response, controller);
  }

  /** The complete events so far (each frame ends in a blank line), keep-alive comments left out. */
  get frames(): string[] {
    return this.text
      .split("\n\n")
      .slice(0, -1)
      .filter((frame) => !frame.startsWith(":"))
      .map((frame) => `${frame}\n\n`);
  }

  get events(): { event: string; id: string; data: Record<string, unknown> }[] {
    return this.frames.map((frame) => {
      const field = (name: string) =>
        frame
          .split("\n")
          .find((line) => line.startsWith(`${name}: `))
          ?.slice(name.length + 2) ?? "";
      return { event: field("event"), id: field("id"), data: JSON.parse(field("data")) };
    });
  }

  /** Resolves once `ready` holds of the text so far; fails after `ms`. */
  async until(ready: (reader: EventStreamReader) => boolean, what: string, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!ready(this)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; received: ${this.text}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** Drops the connection, as a client that goes away does. */
  async close(): Promise<void> {
    this.controller.abort();
    await this.done;
  }
}

/** An operation of docs/openapi.json, as far as its answers go. */
interface DocumentedOperation {
  responses?: Record<string, { content?: object }>;
}

/**
 * The headers that keep app.inject from opening `operation`'s event stream: one that opens never
 * ends, and app.inject waits for the end. With Accept: application/json every check in front of
 * the stream still runs and a valid request is refused (406); inbox-events.test.ts reads the
 * streams themselves over real HTTP.
 */
export function unopenedStream(operation: DocumentedOperation | undefined): Record<string, string> {
  const answersStream = "text/event-stream" in (operation?.responses?.["200"]?.content ?? {});
  return answersStream ? { accept: "application/json" } : {};
}
