/* A password or PIN field as a person of ``kind`` uses it: an adult's password (8 characters or more), a child's
 * PIN (4 to 8 digits, the number keys on a phone). The server checks both again (passwords.check_secret). */

export const SECRET_WORDS = {
  adult: { name: "password", label: "Password (at least 8 characters)" },
  child: { name: "PIN", label: "PIN (4 to 8 digits)" },
};

/* Makes ``input`` ask for the secret of a ``kind`` person. */
export function fitSecret(input, kind) {
  input.type = "password";
  input.autocomplete = "new-password";
  if (kind === "child") {
    input.setAttribute("inputmode", "numeric");
    input.setAttribute("pattern", "[0-9]{4,8}");
    input.minLength = 4;
    input.maxLength = 8;
  } else {
    input.removeAttribute("inputmode");
    input.removeAttribute("pattern");
    input.minLength = 8;
    input.removeAttribute("maxlength");
  }
}

/* "12 conversations", "1 memory". */
export function count(n, one, many = `${one}s`) {
  return `${Number(n).toLocaleString("en")} ${n === 1 ? one : many}`;
}
