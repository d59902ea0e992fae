class Widget { render() { return 1; } }
function mountWidget(el) { return new Widget(); }
const LIMIT = 3;
module.exports = { mountWidget };
