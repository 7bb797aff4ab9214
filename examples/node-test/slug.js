"use strict";
// Turn a title into a URL slug.
function slug(title) {
  return title.trim().toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
}
module.exports = { slug };
