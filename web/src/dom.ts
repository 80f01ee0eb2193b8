/** A small element builder: the pages are plain DOM, no framework and no innerHTML. */
type Attributes = Record<string, string | number | boolean | null | undefined | EventListener>;
export type Child = Node | string | number | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") element.addEventListener(name.replace(/^on/, ""), value);
    else if (value === true) element.setAttribute(name, "");
    else element.setAttribute(name, String(value));
  }
  append(element, children);
  return element;
}

export function append(parent: Node, children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces everything inside `parent`. */
export function replace(parent: Element, ...children: (Child | Child[])[]): void {
  parent.replaceChildren();
  append(parent, children);
}

let fieldIds = 0;

/** A labelled form field; `hint` is linked with aria-describedby. */
export function field(
  label: string,
  input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement,
  hint?: string,
): HTMLDivElement {
  const id = input.id || `field-${++fieldIds}`;
  input.id = id;
  const hintElement = hint ? h("p", { class: "hint", id: `${id}-hint` }, hint) : null;
  if (hintElement) input.setAttribute("aria-describedby", hintElement.id);
  return h("div", { class: "field" }, h("label", { for: id }, label), input, hintElement);
}

/** The live region a form reports into: errors in words, successes and progress text. */
export function statusLine(): HTMLParagraphElement {
  return h("p", { class: "status", role: "status", "aria-live": "polite" });
}

export function showStatus(line: HTMLElement, text: string, kind: "error" | "ok" | "info" = "info"): void {
  line.textContent = text;
  line.dataset.kind = kind;
  line.setAttribute("role", kind === "error" ? "alert" : "status");
}

/** Disables a form's controls while `work` runs, so a second click does not send twice. */
export async function busy<T>(form: HTMLFormElement, work: () => Promise<T>): Promise<T> {
  const controls = [...form.elements] as HTMLButtonElement[];
  for (const control of controls) control.disabled = true;
  form.setAttribute("aria-busy", "true");
  try {
    return await work();
  } finally {
    for (const control of controls) control.disabled = false;
    form.removeAttribute("aria-busy");
  }
}

/**
 * Copies `text` to the clipboard and says so on the button. Where the browser refuses the
 * clipboard, the text shown just before the button is selected instead, for Ctrl+C.
 */
export function copyButton(text: string, label: string): HTMLButtonElement {
  const button = h("button", { type: "button", class: "secondary" }, label);
  button.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = "Copied";
    } catch {
      const shown = button.previousElementSibling;
      if (shown) getSelection()?.selectAllChildren(shown);
      button.textContent = "Selected: press Ctrl+C";
    }
    setTimeout(() => {
      button.textContent = label;
    }, 4000);
  });
  return button;
}
