import { h, replace } from "./dom.js";
import { currentSession } from "./session.js";

export interface PageContext {
  main: HTMLElement;
  query: URLSearchParams;
}

export interface Page {
  title: string;
  /** Pages that need a session send a visitor without one to the login page first. */
  needsSession?: boolean;
  render(context: PageContext): void | Promise<void>;
}

const routes = new Map<string, Page>();
let onNavigate: () => void = () => {};

export function definePages(pages: Record<string, Page>, afterNavigate: () => void): void {
  for (const [path, page] of Object.entries(pages)) routes.set(path, page);
  onNavigate = afterNavigate;
}

/** Moves to a page of the app without reloading (the server answers the same document for each). */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  void render();
}

/** A transfer's own address (its `url`) opens the inbox at that transfer. */
const TRANSFER_PATH = /^\/t\/([\w-]+)$/;
/** A request link's page (decisions 10.4): the token is the whole credential. */
const REQUEST_PATH = /^\/r\/([^/]+)$/;
/** The key its page is defined under (no address is this path itself). */
export const REQUEST_PAGE = "/r/:token";

/** The page a path names, and what its path carries into the query (a transfer's id, a link's token). */
function routeOf(path: string, query: URLSearchParams): Page | undefined {
  const transfer = TRANSFER_PATH.exec(path)?.[1];
  if (transfer) {
    query.set("transfer", transfer);
    return routes.get("/inbox");
  }
  const token = REQUEST_PATH.exec(path)?.[1];
  if (token) {
    query.set("token", token);
    return routes.get(REQUEST_PAGE);
  }
  return routes.get(path);
}

export async function render(): Promise<void> {
  const main = document.getElementById("main") as HTMLElement;
  const query = new URLSearchParams(location.search);
  const page = routeOf(location.pathname, query);
  if (!page) {
    document.title = "Page not found · Handoff";
    onNavigate();
    replace(main, ...notFound(location.pathname));
    return;
  }
  if (page.needsSession && !currentSession()) {
    navigate(`/login?next=${encodeURIComponent(location.pathname)}`, { replace: true });
    return;
  }
  document.title = `${page.title} · Handoff`;
  onNavigate();
  replace(main);
  await page.render({ main, query });
  // Screen readers hear the new page: focus moves to its content, as after a full load.
  main.focus({ preventScroll: true });
}

/** The page of a path the app does not have (the server answers such paths with status 404). */
function notFound(path: string) {
  const session = currentSession();
  return [
    h("h1", {}, "Page not found"),
    h("p", { class: "lead" }, "There is no page at ", h("code", {}, path), "."),
    h(
      "p",
      {},
      "Check the address, or go on from here: ",
      session
        ? h("a", { href: "/inbox", "data-route": true }, "your inbox")
        : h("a", { href: "/", "data-route": true }, "the start page"),
      ".",
    ),
  ];
}

/** Links marked data-route move within the app; every other link behaves as a link. */
export function interceptLinks(): void {
  document.addEventListener("click", (event) => {
    const link = (event.target as Element).closest?.("a[data-route]") as HTMLAnchorElement | null;
    if (
      !link ||
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey
    )
      return;
    event.preventDefault();
    navigate(link.pathname + link.search);
  });
  window.addEventListener("popstate", () => void render());
}
