pub struct Config { pub name: String }
pub enum Level { Low, High }
pub trait Render { fn render(&self); }
impl Config {
    pub fn load() -> Config { Config { name: String::new() } }
}
pub fn parse_args() {}
const LIMIT: usize = 4;
mod inner { pub fn helper() {} }
