/** One server-sent event: its type (`message` when the stream names none), its id, its data. */
export interface ServerSentEvent {
  event: string;
  id: string | null;
  data: string;
}

/**
 * Reads a text/event-stream body into events, as the HTML standard's EventSource parses it
 * (section 9.2.6): lines end in CR, LF or CRLF; `:` starts a comment (the keep-alive); `data:`
 * lines join with LF; an empty line dispatches; an id holds until the stream sets another.
 */
export async function* serverSentEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let id: string | null = null;
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (;;) {
      const end = buffer.search(/\r\n|\r|\n/);
      // A CR last in the buffer may be the first half of a CRLF still on the way.
      if (end < 0 || (end === buffer.length - 1 && buffer.endsWith("\r"))) break;
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith("\r\n", end) ? 2 : 1));
      if (line === "") {
        if (data.length > 0) yield { event: event || "message", id, data: data.join("\n") };
        event = "";
        data = [];
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
      else if (field === "id" && !value.includes("\0")) id = value;
    }
  }
}
