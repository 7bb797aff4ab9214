// Greets the person who typed their name; the Playwright tests drive this form.
document.getElementById("greet").addEventListener("submit", (event) => {
  event.preventDefault();
  const name = document.getElementById("name").value.trim();
  document.getElementById("greeting").textContent = `Hello, ${name}!`;
});
