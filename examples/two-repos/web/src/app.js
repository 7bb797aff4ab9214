export const title = "profile-web";
