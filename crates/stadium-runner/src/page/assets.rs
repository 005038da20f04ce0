//! The fan's page as built from `web/` (committed in `web/dist`), embedded in the
//! binary by the build script.

/// Every file of the page: its path from the site's root (`/index.html`,
/// `/assets/index-<hash>.js`, …) and its bytes.
pub static ASSETS: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/page_assets.rs"));

/// The file served at `path`; `/` is `/index.html`.
pub fn find(path: &str) -> Option<&'static [u8]> {
    let path = if path == "/" { "/index.html" } else { path };
    ASSETS
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, bytes)| *bytes)
}

/// The `content-type` of a file, by its extension.
pub fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or_default() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "json" => "application/json",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_embedded_with_its_scripts() {
        let index = std::str::from_utf8(find("/").expect("index.html embedded")).unwrap();
        let script = index
            .split("src=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("index.html loads a script");
        assert!(find(script).is_some(), "{script} is not embedded");
        assert_eq!(content_type(script), "text/javascript; charset=utf-8");
        assert!(find("/nothing-here.js").is_none());
    }
}
