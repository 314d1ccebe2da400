//! A journey's JSON read into the engine's types (mod.rs), with a one-line usage error
//! that names where it is wrong (`journey: steps[1].choice[0]: …`) and what is known
//! there. The format is loadgen/README.md's "Visits".

use std::time::Duration;

use serde_json::{Map, Value};

use super::random::Think;
use super::{Journey, JourneyUrl, Login, Page, Step, form_encode};
use crate::error::Error;
use crate::target::Url;
use crate::urls::entry_path;

/// The longest think time, or think-time bound, a journey may ask for.
const MAX_THINK: Duration = Duration::from_secs(3600);

fn bad(at: &str, why: impl std::fmt::Display) -> Error {
    Error::Usage(if at.is_empty() { format!("journey: {why}") } else { format!("journey: {at}: {why}") })
}

pub fn from_arg(arg: &str, server: &Url) -> Result<Journey, Error> {
    // JSON text begins with an object (or, wrongly, a list); anything else names a file.
    let text = if arg.trim_start().starts_with(['{', '[']) {
        arg.to_string()
    } else {
        std::fs::read_to_string(arg).map_err(|e| Error::Usage(format!("cannot read the journey file '{arg}': {e}")))?
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| bad("", format!("not JSON ({e})")))?;
    Reader { server, urls: Vec::new(), pages: Vec::new() }.journey(&value)
}

struct Reader<'a> {
    server: &'a Url,
    urls: Vec<JourneyUrl>,
    pages: Vec<Page>,
}

/// The object at `at`, with only `known` keys.
fn object<'v>(value: &'v Value, at: &str, known: &[&str]) -> Result<&'v Map<String, Value>, Error> {
    let map = value.as_object().ok_or_else(|| bad(at, "must be an object"))?;
    if let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(bad(at, format!("unknown key '{key}' (known: {})", known.join(", "))));
    }
    Ok(map)
}

fn string<'v>(value: &'v Value, at: &str) -> Result<&'v str, Error> {
    value.as_str().filter(|s| !s.is_empty()).ok_or_else(|| bad(at, "must be a non-empty string"))
}

fn milliseconds(map: &Map<String, Value>, key: &str, at: &str) -> Result<Duration, Error> {
    let ms = map.get(key).and_then(Value::as_f64).ok_or_else(|| bad(at, format!("needs '{key}', a number of ms")))?;
    if !(0.0..=MAX_THINK.as_secs_f64() * 1e3).contains(&ms) {
        return Err(bad(at, format!("'{key}' must be from 0 to {} ms", MAX_THINK.as_millis())));
    }
    Ok(Duration::from_secs_f64(ms / 1e3))
}

impl Reader<'_> {
    fn journey(mut self, value: &Value) -> Result<Journey, Error> {
        let map = object(value, "", &["steps", "think", "login", "headers", "cache_assets"])?;
        let cache_assets = match map.get("cache_assets") {
            None => true,
            Some(v) => v.as_bool().ok_or_else(|| bad("cache_assets", "must be true or false"))?,
        };
        let think = match map.get("think") {
            Some(t) => think(t, "think")?,
            None => Think::None,
        };
        let headers = match map.get("headers") {
            Some(h) => headers(h)?,
            None => Vec::new(),
        };
        let login = map.get("login").map(|l| self.login(l)).transpose()?;
        let steps = map.get("steps").and_then(Value::as_array).ok_or_else(|| bad("", "needs 'steps', a list"))?;
        if steps.is_empty() {
            return Err(bad("steps", "a journey needs at least one step"));
        }
        let steps: Vec<Step> =
            steps.iter().enumerate().map(|(i, s)| self.step(s, &format!("steps[{i}]"))).collect::<Result<_, _>>()?;
        if login.is_none() && steps[0].options.contains(&None) {
            return Err(bad("steps[0]", "a visit without a login begins with a page: its first step cannot leave"));
        }
        if let Some(l) = &login
            && self.pages.iter().any(|p| p.name == l.name)
        {
            return Err(bad("login", format!("its name '{}' is also a page's: name one of them otherwise", l.name)));
        }
        let mut recorded = value.clone();
        if let Some(login) = recorded.get_mut("login").and_then(Value::as_object_mut) {
            for (key, forms) in login.iter_mut().filter(|(k, _)| *k == "form" || *k == "forms") {
                let each: Vec<&mut Value> = if key == "form" { vec![forms] } else { forms.as_array_mut().into_iter().flatten().collect() };
                for form in each.into_iter().filter_map(Value::as_object_mut) {
                    form.values_mut().for_each(|v| *v = Value::from("*"));
                }
            }
        }
        Ok(Journey { login, steps, think, pages: self.pages, headers, cache_assets, urls: self.urls, recorded })
    }

    /// The index of (method, target) in the URL table, added if new.
    fn url(&mut self, method: &'static str, target: &str, at: &str) -> Result<usize, Error> {
        let path = entry_path(target, self.server).map_err(|e| bad(at, e))?;
        if let Some(i) = self.urls.iter().position(|u| u.method == method && u.path == path) {
            return Ok(i);
        }
        self.urls.push(JourneyUrl { method, path });
        Ok(self.urls.len() - 1)
    }

    fn login(&mut self, value: &Value) -> Result<Login, Error> {
        let map = object(value, "login", &["path", "form", "forms", "form_page", "follow_redirect", "name"])?;
        let form_page = match map.get("form_page") {
            Some(p) => Some(self.url("GET", string(p, "login.form_page")?, "login.form_page")?),
            None => None,
        };
        let post = self.url("POST", string(map.get("path").unwrap_or(&Value::Null), "login.path")?, "login.path")?;
        // One form, or one per account ("forms"): each visit posts one of them.
        let forms: Vec<&Value> = match (map.get("form"), map.get("forms")) {
            (Some(f), None) => vec![f],
            (None, Some(Value::Array(list))) if !list.is_empty() => list.iter().collect(),
            (None, Some(_)) => return Err(bad("login.forms", "must be a non-empty list of forms")),
            (Some(_), Some(_)) => return Err(bad("login", "give 'form' or 'forms', not both")),
            (None, None) => {
                return Err(bad("login", "needs 'form', the fields to post (e.g. {\"log\": …, \"pwd\": …}), or 'forms'"));
            }
        };
        let mut bodies = Vec::with_capacity(forms.len());
        for (i, form) in forms.into_iter().enumerate() {
            let at = if map.contains_key("forms") { format!("login.forms[{i}]") } else { "login.form".into() };
            let form = form.as_object().ok_or_else(|| bad(&at, "must be an object of field: value"))?;
            let mut fields = Vec::with_capacity(form.len());
            for (name, v) in form {
                let v = v.as_str().ok_or_else(|| bad(&format!("{at}.{name}"), "must be a string"))?;
                fields.push((name.clone(), v.to_string()));
            }
            bodies.push(form_encode(&fields));
        }
        let follow_redirect = match map.get("follow_redirect") {
            None => true,
            Some(v) => v.as_bool().ok_or_else(|| bad("login.follow_redirect", "must be true or false"))?,
        };
        let name = match map.get("name") {
            Some(n) => string(n, "login.name")?.to_string(),
            None => "login".to_string(),
        };
        Ok(Login { name, form_page, post, bodies, follow_redirect })
    }

    fn step(&mut self, value: &Value, at: &str) -> Result<Step, Error> {
        let Some(choice) = value.get("choice") else {
            let map = object(value, at, &["page", "assets", "name", "think"])?;
            let page = self.page(map, at)?;
            return Ok(Step { options: vec![Some(page)], weights: vec![1], think: step_think(map, at)? });
        };
        let map = object(value, at, &["choice", "think"])?;
        let options = choice.as_array().filter(|o| !o.is_empty()).ok_or_else(|| bad(at, "'choice' must be a non-empty list"))?;
        let (mut pages, mut weights) = (Vec::new(), Vec::new());
        for (i, option) in options.iter().enumerate() {
            let at = format!("{at}.choice[{i}]");
            let exit = option.get("exit").is_some();
            let known: &[&str] = if exit { &["exit", "weight"] } else { &["page", "assets", "name", "weight"] };
            let o = object(option, &at, known)?;
            let weight = match o.get("weight") {
                None => 1,
                Some(w) => w.as_u64().filter(|&w| (1..=u64::from(u32::MAX)).contains(&w)).ok_or_else(|| {
                    bad(&at, "'weight' must be a whole number from 1 up")
                })? as u32,
            };
            if exit && o.get("exit") != Some(&Value::Bool(true)) {
                return Err(bad(&at, "'exit' can only be true (the visitor leaves the site)"));
            }
            pages.push(if exit { None } else { Some(self.page(o, &at)?) });
            weights.push(weight);
        }
        Ok(Step { options: pages, weights, think: step_think(map, at)? })
    }

    /// The page of `map` (a step or a choice's option), as a page of the journey:
    /// the same name twice is the same page, and must then be the same requests.
    fn page(&mut self, map: &Map<String, Value>, at: &str) -> Result<usize, Error> {
        let target = string(map.get("page").unwrap_or(&Value::Null), &format!("{at}.page"))?;
        let mut urls = vec![self.url("GET", target, &format!("{at}.page"))?];
        if let Some(assets) = map.get("assets") {
            let list = assets.as_array().ok_or_else(|| bad(at, "'assets' must be a list of paths"))?;
            for (i, a) in list.iter().enumerate() {
                let at = format!("{at}.assets[{i}]");
                urls.push(self.url("GET", string(a, &at)?, &at)?);
            }
        }
        let name = match map.get("name") {
            Some(n) => string(n, &format!("{at}.name"))?.to_string(),
            None => self.urls[urls[0]].path.clone(),
        };
        match self.pages.iter().position(|p| p.name == name) {
            Some(i) if self.pages[i].urls == urls => Ok(i),
            Some(_) => Err(bad(at, format!("another page is named '{name}' with other requests: give this one a name"))),
            None => {
                self.pages.push(Page { name, urls });
                Ok(self.pages.len() - 1)
            }
        }
    }
}

fn step_think(map: &Map<String, Value>, at: &str) -> Result<Option<Think>, Error> {
    map.get("think").map(|t| think(t, &format!("{at}.think"))).transpose()
}

/// `{"kind": "none" | "fixed" (ms) | "exponential" (mean_ms, max_ms = 10 × mean) |
/// "uniform" (min_ms, max_ms)}`.
fn think(value: &Value, at: &str) -> Result<Think, Error> {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    Ok(match kind {
        "none" => {
            object(value, at, &["kind"])?;
            Think::None
        }
        "fixed" => Think::Fixed(milliseconds(object(value, at, &["kind", "ms"])?, "ms", at)?),
        "exponential" => {
            let map = object(value, at, &["kind", "mean_ms", "max_ms"])?;
            let mean = milliseconds(map, "mean_ms", at)?;
            let max = if map.contains_key("max_ms") { milliseconds(map, "max_ms", at)? } else { (mean * 10).min(MAX_THINK) };
            if max < mean {
                return Err(bad(at, "'max_ms' must be at least 'mean_ms'"));
            }
            Think::Exponential { mean, max }
        }
        "uniform" => {
            let map = object(value, at, &["kind", "min_ms", "max_ms"])?;
            let (min, max) = (milliseconds(map, "min_ms", at)?, milliseconds(map, "max_ms", at)?);
            if max < min {
                return Err(bad(at, "'max_ms' must be at least 'min_ms'"));
            }
            Think::Uniform { min, max }
        }
        _ => return Err(bad(at, "'kind' must be none, fixed, exponential or uniform")),
    })
}

/// Headers every request of a visit carries: names and values as -H takes them; not
/// the ones the engine writes itself (Cookie: the jar's; the body's framing).
fn headers(value: &Value) -> Result<Vec<(String, String)>, Error> {
    let map = value.as_object().ok_or_else(|| bad("headers", "must be an object of name: value"))?;
    let mut out = Vec::with_capacity(map.len());
    for (name, v) in map {
        let at = format!("headers.{name}");
        let v = v.as_str().ok_or_else(|| bad(&at, "must be a string"))?.trim();
        // RFC 9110 §5.1 and §5.5: a token for a name, no line break in a value.
        let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        if name.is_empty() || !name.bytes().all(token) {
            return Err(bad(&at, "is not a valid header name"));
        }
        if v.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
            return Err(bad(&at, "has a line break in its value"));
        }
        if ["cookie", "content-length", "transfer-encoding"].iter().any(|n| name.eq_ignore_ascii_case(n)) {
            return Err(bad(&at, "the engine writes this header itself (Cookie from the visitor's jar)"));
        }
        out.push((name.clone(), v.to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::parse_url;

    fn read(json: &str) -> Result<Journey, String> {
        from_arg(json, &parse_url("http://127.0.0.1:8080/").unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_journey_with_login_choices_and_think_times() {
        let j = read(
            r#"{"think": {"kind": "exponential", "mean_ms": 2000},
                "headers": {"User-Agent": "stackbench"},
                "login": {"form_page": "/wp-login.php", "path": "/wp-login.php",
                          "form": {"log": "alice", "pwd": "s3cret", "testcookie": "1"}},
                "steps": [
                  {"page": "/", "assets": ["/a.css", "/b.js"]},
                  {"choice": [{"page": "/?p=1", "assets": ["/a.css"], "weight": 3, "name": "post"},
                              {"exit": true}],
                   "think": {"kind": "fixed", "ms": 500}},
                  {"page": "http://127.0.0.1:8080/", "assets": ["/a.css", "/b.js"]}
                ]}"#,
        )
        .unwrap();
        let paths: Vec<(&str, &str)> = j.urls.iter().map(|u| (u.method, u.path.as_str())).collect();
        assert_eq!(paths, [("GET", "/wp-login.php"), ("POST", "/wp-login.php"), ("GET", "/"), ("GET", "/a.css"),
                           ("GET", "/b.js"), ("GET", "/?p=1")]);
        let login = j.login.as_ref().unwrap();
        assert_eq!((login.form_page, login.post, login.follow_redirect), (Some(0), 1, true));
        assert_eq!(login.bodies, [b"log=alice&pwd=s3cret&testcookie=1"], "fields in name order");
        // The first and third steps are the same page: one row.
        assert_eq!(j.pages, [Page { name: "/".into(), urls: vec![2, 3, 4] }, Page { name: "post".into(), urls: vec![5, 3] }]);
        assert_eq!(j.steps[1].options, [Some(1), None]);
        assert_eq!(j.steps[1].weights, [3, 1]);
        assert_eq!(j.steps[1].think, Some(Think::Fixed(Duration::from_millis(500))));
        assert_eq!(j.think, Think::Exponential { mean: Duration::from_secs(2), max: Duration::from_secs(20) });
        assert_eq!(j.headers, [("User-Agent".to_string(), "stackbench".to_string())]);
        assert!(j.cache_assets, "a browser keeps what it got");
        let rows: Vec<(String, bool)> = j.rows().into_iter().map(|r| (r.name, r.login)).collect();
        assert_eq!(rows, [("login".into(), true), ("/".into(), false), ("post".into(), false)]);
        assert_eq!(j.row_of_page(1), 2);
        assert_eq!(j.recorded["login"]["form"]["pwd"], "*", "no password in the result");
    }

    #[test]
    fn a_login_with_an_account_per_visit() {
        let j = read(r#"{"login": {"path": "/l", "forms": [{"log": "a", "pwd": "1"}, {"log": "b", "pwd": "2"}]},
                         "steps": [{"page": "/"}]}"#)
        .unwrap();
        assert_eq!(j.login.unwrap().bodies, [b"log=a&pwd=1".to_vec(), b"log=b&pwd=2".to_vec()]);
        assert_eq!(j.recorded["login"]["forms"][1]["pwd"], "*");
    }

    #[test]
    fn a_page_alone() {
        let j = read(r#"{"steps": [{"page": "/count.php"}]}"#).unwrap();
        assert_eq!(j.think, Think::None);
        assert_eq!((j.pages.len(), j.steps.len(), j.login.is_none()), (1, 1, true));
        assert!(!read(r#"{"cache_assets": false, "steps": [{"page": "/"}]}"#).unwrap().cache_assets);
    }

    #[test]
    fn refusals_say_where() {
        let cases = [
            ("[]", "journey: must be an object"),
            ("{", "journey: not JSON"),
            (r#"{"steps": []}"#, "journey: steps: a journey needs at least one step"),
            (r#"{"step": []}"#, "unknown key 'step'"),
            (r#"{"steps": [{"page": "x.php"}]}"#, "journey: steps[0].page: 'x.php' must be a path"),
            (r#"{"steps": [{"page": "http://10.0.0.1/"}]}"#, "is not on 127.0.0.1:8080"),
            (r#"{"steps": [{"page": "/", "asset": []}]}"#, "steps[0]: unknown key 'asset'"),
            (r#"{"steps": [{"choice": []}]}"#, "'choice' must be a non-empty list"),
            (r#"{"steps": [{"choice": [{"page": "/", "weight": 0}]}]}"#, "steps[0].choice[0]: 'weight' must be"),
            (r#"{"steps": [{"choice": [{"exit": false}]}]}"#, "'exit' can only be true"),
            (r#"{"steps": [{"choice": [{"page": "/"}, {"exit": true}]}]}"#, "its first step cannot leave"),
            (r#"{"steps": [{"page": "/", "name": "a"}, {"page": "/b", "name": "a"}]}"#, "another page is named 'a'"),
            (r#"{"think": {"kind": "gauss"}, "steps": [{"page": "/"}]}"#, "'kind' must be none, fixed"),
            (r#"{"think": {"kind": "fixed"}, "steps": [{"page": "/"}]}"#, "needs 'ms'"),
            (r#"{"think": {"kind": "fixed", "ms": -1}, "steps": [{"page": "/"}]}"#, "'ms' must be from 0"),
            (r#"{"think": {"kind": "uniform", "min_ms": 5, "max_ms": 1}, "steps": [{"page": "/"}]}"#, "at least 'min_ms'"),
            (r#"{"think": {"kind": "exponential", "mean_ms": 5, "max_ms": 1}, "steps": [{"page": "/"}]}"#, "at least 'mean_ms'"),
            (r#"{"login": {"path": "/l"}, "steps": [{"page": "/"}]}"#, "journey: login: needs 'form'"),
            (r#"{"login": {"form": {}}, "steps": [{"page": "/"}]}"#, "login.path: must be a non-empty string"),
            (r#"{"login": {"path": "/l", "form": {"a": 1}}, "steps": [{"page": "/"}]}"#, "login.form.a: must be a string"),
            (r#"{"login": {"path": "/l", "forms": []}, "steps": [{"page": "/"}]}"#, "login.forms: must be a non-empty"),
            (r#"{"login": {"path": "/l", "forms": [{"a": 1}]}, "steps": [{"page": "/"}]}"#, "login.forms[0].a: must be"),
            (r#"{"login": {"path": "/l", "form": {}, "forms": [{}]}, "steps": [{"page": "/"}]}"#, "not both"),
            (r#"{"login": {"path": "/l", "form": {}, "name": "/"}, "steps": [{"page": "/"}]}"#, "also a page's"),
            (r#"{"headers": {"Cookie": "a=1"}, "steps": [{"page": "/"}]}"#, "headers.Cookie: the engine writes"),
            (r#"{"headers": {"X": "a\nb"}, "steps": [{"page": "/"}]}"#, "line break"),
            (r#"{"cache_assets": 1, "steps": [{"page": "/"}]}"#, "cache_assets: must be true or false"),
            ("/no/such/journey.json", "cannot read the journey file '/no/such/journey.json'"),
        ];
        for (json, words) in cases {
            let err = read(json).expect_err(json);
            assert!(err.contains(words), "{json}: {err}");
            assert!(!err.contains('\n'), "one line: {err}");
        }
    }

    #[test]
    fn a_journey_from_a_file() {
        let path = std::env::temp_dir().join(format!("journey-{}.json", std::process::id()));
        std::fs::write(&path, r#"{"steps": [{"page": "/a"}, {"page": "/b"}]}"#).unwrap();
        let j = read(path.to_str().unwrap()).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(j.pages.len(), 2);
    }
}
