import { api, whenSessionLost } from "./api.js";
import { h, replace } from "./dom.js";
import { forgotPasswordPage, resendVerificationPage } from "./pages/account-mail.js";
import { homePage } from "./pages/home.js";
import { inboxPage } from "./pages/inbox.js";
import { loginPage } from "./pages/login.js";
import { requestLinkPage } from "./pages/request-link.js";
import { resetPasswordPage } from "./pages/reset-password.js";
import { sendPage } from "./pages/send.js";
import { sentPage } from "./pages/sent.js";
import { settingsPage } from "./pages/settings.js";
import { signupPage } from "./pages/signup.js";
import { verifyPage } from "./pages/verify.js";
import { forgetUnlocked } from "./receiving-key.js";
import { definePages, interceptLinks, navigate, REQUEST_PAGE, render } from "./router.js";
import { registerDownloadWorker } from "./save.js";
import { clearSession, currentSession, onSessionChange } from "./session.js";
import { forgetAllUploads } from "./unfinished-uploads.js";
import "./styles.css";

function link(path: string, label: string) {
  const current = location.pathname === path ? "page" : null;
  return h("a", { href: path, "data-route": true, "aria-current": current }, label);
}

async function logOut(): Promise<void> {
  try {
    await api("/v1/auth/logout", { method: "POST" });
  } finally {
    forgetUnlocked();
    forgetAllUploads();
    clearSession();
    navigate("/login");
  }
}

function drawNav(): void {
  const nav = document.getElementById("nav") as HTMLElement;
  const session = currentSession();
  if (!session) {
    replace(nav, link("/signup", "Sign up"), link("/login", "Log in"));
    return;
  }
  replace(
    nav,
    link("/inbox", "Inbox"),
    link("/send", "Send"),
    link("/sent", "Sent"),
    link("/settings", "Settings"),
    h("span", { class: "who" }, session.account.email),
    h("button", { type: "button", class: "link", onclick: () => void logOut() }, "Log out"),
  );
}

definePages(
  {
    "/": homePage,
    "/signup": signupPage,
    "/verify": verifyPage,
    "/login": loginPage,
    "/inbox": inboxPage,
    "/send": sendPage,
    "/settings": settingsPage,
    "/sent": sentPage,
    "/forgot-password": forgotPasswordPage,
    "/reset-password": resetPasswordPage,
    "/resend-verification": resendVerificationPage,
    [REQUEST_PAGE]: requestLinkPage,
  },
  drawNav,
);
onSessionChange(drawNav);
whenSessionLost(() => {
  forgetUnlocked();
  navigate(`/login?next=${encodeURIComponent(location.pathname)}&expired=1`);
});
interceptLinks();
registerDownloadWorker();
void render();
