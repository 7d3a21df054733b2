/**
 * A secret's name (CONTRACT section 13): an upper-case identifier, as `${secret:NAME}` names it.
 * One rule for the secrets module, the tool headers that reference secrets, and the path check.
 */
export const SECRET_NAME_RE = /^[A-Z][A-Z0-9_]{0,63}$/;
/** The rule in words, for error messages. */
export const SECRET_NAME_RULE = 'must match [A-Z][A-Z0-9_]{0,63} (an upper-case letter, then up to 63 upper-case letters, digits or _)';
