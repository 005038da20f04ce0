// An in-page confirmation (never window.confirm) for what cannot be undone: a question
// with a yes and a no button, Escape for no. Focus goes to the safe answer and comes
// back to where it was once answered.

import { h } from "../dom.js";

export interface Question {
  /** Id of the confirmation element. */
  id: string;
  question: string;
  detail?: string;
  yes: string;
  no: string;
  /** More fields inside the confirmation (e.g. a reason). */
  extra?: Node[];
}

/** Asks `q` in `slot`; resolves true for yes, false for no or Escape. */
export function confirmInPage(slot: HTMLElement, q: Question): Promise<boolean> {
  const returnTo = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  return new Promise((resolve) => {
    const yes = h("button", { type: "button", class: "danger" }, q.yes);
    const no = h("button", { type: "button", class: "secondary" }, q.no);
    const box = h(
      "div",
      {
        id: q.id,
        class: "card warning confirm",
        role: "alertdialog",
        "aria-labelledby": `${q.id}-question`,
        "aria-describedby": q.detail ? `${q.id}-detail` : undefined,
      },
      h("p", { id: `${q.id}-question`, class: "question" }, q.question),
      q.detail ? h("p", { id: `${q.id}-detail`, class: "muted" }, q.detail) : null,
      ...(q.extra ?? []),
      h("div", { class: "actions" }, yes, no),
    );
    const answer = (value: boolean) => {
      slot.replaceChildren();
      if (returnTo && returnTo.isConnected) returnTo.focus();
      resolve(value);
    };
    yes.addEventListener("click", () => answer(true));
    no.addEventListener("click", () => answer(false));
    box.addEventListener("keydown", (e) => {
      if (e.key === "Escape") {
        e.preventDefault();
        answer(false);
      }
    });
    slot.replaceChildren(box);
    no.focus();
  });
}
