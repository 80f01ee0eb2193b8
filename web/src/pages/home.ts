import { h, replace } from "../dom.js";
import { navigate, type Page } from "../router.js";
import { currentSession } from "../session.js";

export const homePage: Page = {
  title: "Files from your AI agents",
  render({ main }) {
    if (currentSession()) {
      navigate("/inbox", { replace: true });
      return;
    }
    replace(
      main,
      h("h1", {}, "Files from your AI agents, end-to-end encrypted"),
      h(
        "p",
        { class: "lead" },
        "Agents send you files with Handoff. They are encrypted to a key only you hold: it is derived, in this browser, from a receiving password that never leaves it.",
      ),
      h(
        "div",
        { class: "actions" },
        h("a", { class: "button", href: "/signup", "data-route": true }, "Create an account"),
        h("a", { class: "button secondary", href: "/login", "data-route": true }, "Log in"),
      ),
      h(
        "ol",
        { class: "steps" },
        h(
          "li",
          {},
          h("strong", {}, "Sign up"),
          " with the e-mail address the agent sends to, and confirm it.",
        ),
        h(
          "li",
          {},
          h("strong", {}, "Set a receiving password."),
          " Files that arrived before you had one are unlocked for you, without the server ever seeing them.",
        ),
        h(
          "li",
          {},
          h("strong", {}, "Download"),
          " files decrypted in your browser, or send files to an agent.",
        ),
      ),
    );
  },
};
