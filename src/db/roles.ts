/**
 * The roles of accounts and keys. A module of its own, importing nothing, so that what needs
 * only the names (the configuration, read before anything heavy is loaded) does not load the
 * ORM's entity definitions.
 */
export const ROLES = ['free', 'contributor', 'professional', 'business', 'enterprise', 'honeypot'] as const;
export type Role = (typeof ROLES)[number];
