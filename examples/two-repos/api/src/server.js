export function handler() { return "profile-api"; }
