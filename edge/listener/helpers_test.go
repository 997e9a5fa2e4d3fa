package listener_test

// testBrand is the brand of the API the listener tests serve.
const testBrand = "aurora"
