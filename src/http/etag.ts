/** Does an If-None-Match header name this tag (a list of tags, weak or strong, or `*`)? */
export function ifNoneMatchHas(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === `W/${etag}`;
  });
}
